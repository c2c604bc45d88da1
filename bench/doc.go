// Package bench compares JSON-RPC 2.0 / ACP peers on one workload.
//
// Every peer is driven through the same two roles: an agent side that serves
// the workload (see [Workload]) and a client side that calls it (see
// [Client]). Adapters live in peer_*.go, one file per peer. The in-process
// benchmarks are in bench_test.go; cmd/server serves a peer over stdio and
// cmd/acpbench drives the cross-process measurements.
//
// This is a separate module so that users of the library never download the
// peers it is compared with.
package bench
