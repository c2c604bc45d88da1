// Package interoptest holds what the tests against other programs need:
// Node.js and the pinned TypeScript SDK (RequireNode, RequireNodeModules,
// NodePackages), HAProxy (RequireHAProxy), the SDK's own validators
// (SchemaValidator) and the round trips that check the generated ACP types
// against them (SchemaRoundTrip, GoldenRoundTrip, TypesRoundTrip, on a
// wire that WireLog records from a Conn's hooks), a
// buffer a subprocess's output and the test can share (SyncBuffer), and,
// on Linux, what /proc says of an agent's processes (ReadProcStat,
// ProcessTree, GroupMembers, StillAlive). A test
// that lacks a program fails and says how to install it; it never skips in
// silence.
//
// The conversations themselves are written with internal/wiretest.
package interoptest
