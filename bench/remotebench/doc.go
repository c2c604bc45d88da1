// Package remotebench measures an ACP agent served over WebSocket and
// Streamable HTTP: acprpc's remote.Server beside any other server of the
// same agent (the TypeScript SDK's, in ../ts/remote-agent.mjs), driven by
// one load generator that speaks the wire itself, the same way to every
// server.
//
// The agent's behaviour is fixed: a prompt TextTurn sends Updates
// session/update notifications, then answers end_turn; a prompt TextWait
// sends one, then waits for session/cancel and answers cancelled. Run
// measures, on one server process: turns per second on one connection and
// on many at once, the cancel answer's latency, the server's resident
// memory per connection idle and with a turn in flight, and the time for
// every connection's turn to be cancelled at once.
package remotebench
