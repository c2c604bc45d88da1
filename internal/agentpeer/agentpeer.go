// Package agentpeer lets agentproc tell the Conn it makes that its peer is
// an agent whose stdout the Conn reads, so that the Conn words what it logs
// of that output for the client's author from the first line, before any
// initialize has said which side is which. acprpc sets Mark when it is
// initialised; agentproc, which imports acprpc, calls it.
package agentpeer

// Mark records that the peer of conn, an *acprpc.Conn, is an agent.
var Mark func(conn any)
