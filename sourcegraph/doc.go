// Package sourcegraph gives a program that runs github.com/sourcegraph/jsonrpc2's
// *jsonrpc2.Conn (an LSP server, an ACP library built on that engine) acprpc's
// cancellation without changing engines:
//
//   - every incoming request gets a context of its own, registered by its ID
//     before its handler runs, and cancelled, with cause
//     acprpc.ErrPeerCancelled, by the peer's $/cancel_request (and, for ACP,
//     by session/cancel and session/close for the session its params name,
//     cause acprpc.ErrSessionCancelled; a session/close sent as a request
//     is served once the requests it cancelled are answered);
//   - every request is answered exactly once: the handler's reply, the
//     method's cancellation marker or -32800 when it was cancelled, also
//     when the handler never replies, replies twice, or panics, also when
//     the peer reuses an answered request's ID while its handler runs, and
//     also when the peer's input ends right after it (the engine closes
//     then: the Layer holds the end back until each request read before it
//     is answered, by its handler within Options.InputEndGrace, else as
//     cancelled); only the engine's own Close drops what is in flight;
//   - Call sends $/cancel_request when the caller's context ends, which the
//     engine's own Call does not.
//
// A Layer does the first two for one connection: its Stream wraps the
// connection's ObjectStream, so that it sees every answer the engine writes
// and lets only the first for each request through, and its Handler wraps
// the application's jsonrpc2.Handler. NewConn builds both:
//
//	conn := sourcegraph.NewConn(ctx, jsonrpc2.NewPlainObjectStream(rwc), handler, nil)
//
// The handler replies as it always has, with conn.Reply or
// conn.ReplyWithError, before it returns; the Layer runs it on a goroutine
// of its own. Notifications are handled in order on the engine's read
// goroutine, as the engine does, or each on a goroutine of its own when the
// handler is a jsonrpc2.AsyncHandler, which the Layer unwraps for requests
// (its goroutine would start the handler after the next message is read).
//
// What the engine decides stays the engine's: it closes the connection on
// a line that is not JSON, on a batch it cannot type, and on an ID that is
// neither a string nor an integer; it reads an ID of -1 as
// 18446744073709551615 and answers with that; it takes "id": null for a
// notification, which is never answered; it re-encodes params through a
// map. docs/embedding.md lists these against acprpc's own engine.
package sourcegraph
