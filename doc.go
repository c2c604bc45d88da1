// Package acprpc is a JSON-RPC 2.0 connection for the Agent Client Protocol
// (ACP) that gets cancellation right: every request can be cancelled from
// either side, every request is answered exactly once, and nothing in flight
// is lost to a bad line, a slow handler or a vanished peer.
//
// A Conn runs over a Transport, which carries whole messages: a Stream for
// ACP's stdio framing (one JSON message per line), any of
// github.com/sourcegraph/jsonrpc2's object streams through ObjectStream, or
// a remote transport (WebSocket, Streamable HTTP) from another package. The
// Conn owns everything that decides what the peer sees: parsing, IDs,
// answers and cancellation, the same over every transport.
//
// # Connections
//
// A Conn is one side of a connection, agent or client alike. It serves the
// peer's requests and notifications with a Handler, and makes its own calls
// with Call and Notify:
//
//	conn := acprpc.NewConn(ctx, acprpc.NewStreamPipes(os.Stdin, os.Stdout), handler, nil)
//	defer conn.Close()
//	var result PromptResponse
//	err := conn.Call(ctx, "session/prompt", params, &result)
//
// A client starts its agent with StartAgent, which runs the command with
// the connection over its stdin and stdout, passes its stderr to a writer
// or a logger, and on Close ends it: stdin closed, a short grace, SIGTERM
// to the agent's process group, a grace, then SIGKILL; no child of the
// agent outlives it.
//
// Options are optional: the zero value gives ACP's cancellation markers and
// session cancellation, a 32 MiB message limit and a two-second grace period.
//
// # Transports
//
// A Transport carries one whole message per Recv and per Send, and knows
// nothing of JSON-RPC, so every transport gets the same validation, IDs,
// bad-input answers and limits from the Conn. NewStream and NewStreamPipes
// give ACP's stdio framing; ObjectStream adapts sourcegraph/jsonrpc2's object
// streams (LSP's Content-Length framing, its WebSocket stream); Pipe joins
// two Conns in one process; the remote package serves and dials ACP over
// WebSocket and Streamable HTTP.
//
// # Hooks
//
// Options.Hooks sees every message a connection receives or sends, in wire
// order, including the answers and cancels the library builds itself
// (Message.Generated), with the context each belongs to: enough for a wire
// trace (LogHooks), metrics and tracing. Hooks observe and cannot change a
// message, so they cannot break the exactly-once rule.
//
// # Contexts
//
// Each incoming request runs its handler on a goroutine of its own with a
// context of its own. The context is registered in the in-flight table under
// the request's exact ID before the handler starts and before the next
// message is read, so a $/cancel_request that arrives right behind its
// request always
// finds it. The context carries the values of the context given to NewConn,
// and RequestFromContext and ConnFromContext give the handler its request and
// its connection, to call the peer back. Options.HandlerContext adds values
// of the application's own to each handler's context (a span, a logger that
// names the request), deriving from the Conn's so that cancellation still
// reaches the handler.
//
// # Cancellation causes
//
// A handler's context ends for one of these causes, which context.Cause
// returns and errors.Is recognises:
//
//   - ErrPeerCancelled: the peer sent $/cancel_request for this request;
//   - ErrSessionCancelled: the peer sent session/cancel or session/close for
//     the session named by the request's params.sessionId, or this side
//     called CancelSession;
//   - ErrEntityCancelled (ACP v2): the peer sent tool_call/cancel or
//     terminal/cancel for a context from CancellableToolCall or
//     CancellableTerminal;
//   - ErrDeadline: Options.HandlerTimeout passed;
//   - ErrShutdown: this side is shutting the connection down (Shutdown);
//   - a cause of the application's own, given to CancelRequest (a limit
//     reached, a resource gone);
//   - ErrConnClosed: the connection closed.
//
// The cause is recorded when the cancellation arrives, and it is that record,
// not the state of the context when the handler returns, that decides whether
// the request was cancelled.
//
// Outgoing calls cancel by context too: when the context given to Call ends
// before the answer, the peer is sent one $/cancel_request with that
// request's ID. A handler that passes its own context to the calls it makes
// therefore cancels them all when its request is cancelled, each with its
// own $/cancel_request, however many hops the cascade has.
//
// # Exactly one answer
//
// Every request gets exactly one answer, never none and never two:
//
//   - the handler's result, also when it returns one after a cancel (a
//     partial result is a valid answer);
//   - if the request was cancelled and the handler returns an error, or does
//     not return within Options.CancelGrace, or if the handler returns
//     ErrCancelled (or a -32800 *Error) of its own to say that it gave up on
//     the request: the method's cancellation marker
//     when one is registered (ACP's: {"stopReason":"cancelled"} for
//     session/prompt, {"outcome":{"outcome":"cancelled"}} for
//     session/request_permission), else the error -32800 "Request
//     cancelled". The handler's later return is dropped;
//   - otherwise, for an error: the code and data of the handler's own
//     *Error in its chain, or -32603 with its message; a panic is -32603,
//     logged with its stack;
//   - -32601 for an unknown method and for any request whose method starts
//     with "$/".
//
// Cancels for unknown or already answered IDs are ignored, and no
// notification or answer is ever answered. An answer to one of our calls that
// breaks the protocol (a "jsonrpc" other than "2.0", both a result and an
// error) fails that call with a -32603 error saying why; a null "error"
// beside a result, a null "result" beside an error, and "method":null, as
// peers that write every member send them, are ignored.
//
// A peer's error never passes through as this side's answer by accident. A
// handler that returns the error of a failed nested Call returns an *Error
// inside a *CallError: that code is the peer's answer to the nested call,
// not this side's answer to its own request, so it is answered -32603 with a
// message naming the failed call. Passed on, a client's -32601 for
// session/request_permission would tell it that session/prompt does not
// exist. A handler that means to answer with a code wraps an *Error of its
// own around the call's error, as in fmt.Errorf("%w: %w", ownErr, err);
// and inside a cancelled request, the cancelled answer wins as always.
//
// # Typed methods
//
// A Router serves each method with a function of its own, its params
// decoded once into the function's parameter type and its result the
// answer; CallFor is Call with the result as a return value. The packages
// acpv1 and acpv2 are ACP's messages as Go types, generated from the
// protocol's schema, with a constant for each method:
//
//	r := acprpc.NewRouter()
//	r.Register(acpv1.MethodSessionPrompt, acprpc.RequestHandler(func(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
//		perm, err := acprpc.CallFor[acpv1.RequestPermissionResponse](ctx, acprpc.ConnFromContext(ctx), acpv1.MethodSessionRequestPermission, ask)
//		...
//	}))
//	r.Register(acpv1.MethodSessionCancel, acprpc.NotificationHandler(func(ctx context.Context, p acpv1.CancelNotification) {}))
//
// Params that do not decode are answered -32602, a method nobody registered
// -32601. A Router is a Handler, and any Handler can be registered for a
// method or as the fallback, so an SDK keeps the raw Request where it needs
// it and can change its methods while the connection runs.
//
// # ACP versions
//
// A connection speaks one ACP version, v1 or v2, and Conn.ProtocolVersion
// reports it: negotiated by the Conn itself for an agent with
// Options.SupportedVersions or a VersionRouter handler (-32022 when no version
// fits), learnt from the initialize exchange it carries otherwise, or set by
// the application. Everything that differs by version is one set of rules
// the Conn holds; v1's are unchanged. On v2:
//
//   - session/prompt has no cancellation marker: a prompt cancelled before
//     it is inserted is answered -32800;
//   - a prompt's turn is the session's foreground work, a Work registered
//     when the prompt is read (WorkFromContext) whose context outlives the
//     request and is cancelled by session/cancel and session/close; it ends
//     with exactly one idle state_update (Work.End, or the layer once
//     Options.CancelGrace has passed after a cancel), after every update sent
//     under it, and nothing of the work is sent after that;
//   - session/close is a request, answered after that idle state_update;
//   - tool_call/cancel and terminal/cancel cancel the tool calls and
//     terminals registered with CancellableToolCall and CancellableTerminal,
//     and are answered -32602 for others the handler does not serve;
//   - CancelSession leaves every request to the agent's $/cancel_request.
//
// docs/versions.md has the details and a migration note for agents.
//
// # Ordering
//
// Requests run concurrently, up to Options.MaxConcurrentRequests if set.
// Notifications are handled one at a time in arrival order, on a goroutine of
// their own, so a slow one delays only later notifications. Cancellations are
// handled on the read loop itself, ahead of every queue.
//
// An answer reaches its caller only after every notification the peer sent
// before it has been handled: the session/update notifications of a prompt
// turn are all seen before Call returns the turn's result.
//
// Outgoing messages are sent in the order they are sent, one at a time. A
// call, an answer or a cancel that finds nothing else being written is
// written by its sender, with a write that never waits for the peer (over a
// polled descriptor or a Pipe); every other message is queued for a writer
// goroutine, which runs while there is something to write and lets a burst
// share a write. So a peer that stops reading never blocks a caller.
//
// # Bad input
//
// A message that is not JSON is answered -32700 with a null ID; a batch, a
// non-object, or an ID that is neither a string nor a number whose value is
// an integer of 64 bits is answered -32600; a message over Options.MaxMessageSize is answered
// -32600 with its top-level ID, wherever in the message it is, and skipped
// without being held in memory (an over-long answer to one of our calls
// fails that call instead). The connection goes on and nothing in flight is
// disturbed. IDs are sent back byte for byte, so negative IDs, IDs above 2^53
// and escaped strings survive, and 1 and "1" are different requests, while 1,
// 1.0 and 1e0 are one request (and an answer spelled 1e0 answers our call
// 1); string
// IDs that differ only in lone surrogate escapes or in bytes that are not
// UTF-8 are different requests too.
//
// What this side sends is checked as well: a json.RawMessage result, params
// or marker goes out compacted onto its line, and one that is not valid JSON
// is never written (a result is answered -32603, a Call or Notify fails).
//
// # Limits
//
// A peer cannot make the connection hold unbounded memory. Options bound the
// message size (MaxMessageSize), the requests in flight by number and by
// bytes (MaxInFlight, MaxInFlightBytes: one over either is answered -32603 at
// once, never queued, so the reader never waits on a handler), this side's
// calls awaiting answers (MaxOutgoing: Call fails with ErrTooManyCalls), the
// notifications waiting for the handler by number and by bytes
// (MaxQueuedNotifications, MaxQueuedNotificationBytes) and the answers
// waiting to be written (MaxQueuedWrite). The last ones push back: the
// connection stops reading until there is room, and drops nothing. While a
// notification handler waits for a Call made with its context, the reader
// reads on, to four times the notification bounds, so that the answer
// behind the notifications can be reached. A cancel is never dropped either,
// but behind a full queue it waits with the rest of the input, so a
// notification handler must never wait for a request to be cancelled.
//
// With the defaults, the most a peer can make one connection hold is about
// 840 MiB: 256 MiB of requests in flight and about 4 KiB for each of up to
// 100,000 of them (its entry, its context and its handler's goroutine,
// about 390 MiB), 64 MiB of queued notifications and one being handled
// (32 MiB), 32 MiB of answers waiting to be written, and the message being
// read (up to twice MaxMessageSize while its parts are joined, 64 MiB).
// While a notification handler waits for its own call, the notification
// queue may hold 256 MiB, about 1 GiB in all. Beyond that is the
// application's: what its handlers keep, their answers (the write queue
// holds the answers of the requests running when it filled), and the
// answers to its own calls until each caller takes its own. Lowering
// MaxInFlight and MaxInFlightBytes lowers the bound the most.
//
// # Shutdown
//
// Shutdown is the graceful end, ACP's internal cancellation: it stops taking
// requests (each one read from then on is answered as cancelled), cancels
// every request in flight and every v2 session's foreground work with
// ErrShutdown, sends $/cancel_request for this side's own calls, lets each
// request end with its result, its marker or -32800 under the usual grace
// rules, flushes, and closes. It returns when all is sent, or at once, as
// Close, when its context ends:
//
//	sigs, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
//	defer stop()
//	<-sigs.Done()
//	grace, cancel := context.WithTimeout(ctx, 5*time.Second)
//	defer cancel()
//	err := conn.Shutdown(grace) // every request answered, then closed
//
// Close is the immediate stop, and the other ways a connection ends are
// immediate too, but for one: at the end of the peer's input, the
// notifications already read are handled first (for up to a second), with
// the connection still open, so a peer that exits right after its last
// session/updates and its answer loses none of them, and the answer reaches
// its caller after them. Close, the end of the peer's input, a failed
// write, or the end of the context given to NewConn close the connection. Every handler's context is
// then cancelled with ErrConnClosed, every pending Call returns an error that
// matches ErrConnClosed, and Close returns once the read loop, the writer and
// the notification goroutine have ended, promptly even when the peer has
// stopped reading or the transport is a file no close can interrupt; idle handler goroutines leave as it returns. A handler
// still running is the application's: its context is cancelled and its
// answer dropped. Closing twice is safe.
//
// errors.Is(err, ErrConnClosed) tells a Call that got no answer because the
// connection closed from every answer the peer can send: no error answer,
// whatever its code or text, matches it, and a closed connection does not
// match ErrCancelled.
package acprpc
