// Package wire is the one reading and writing of JSON-RPC message bytes
// that the acprpc module and its remote transports share: a validating
// scanner, the one-pass parse that classifies a message, member lookup,
// the scan that finds an over-long message's envelope as it is dropped,
// the rule for which IDs a connection carries and how they are keyed, and
// the builders of outgoing messages.
//
// Everything here is a pure function of the bytes it is given, or a value
// that follows bytes handed to it: no goroutines, no locks, no I/O. Byte
// slices a Message holds point into the message parsed, never copies.
package wire
