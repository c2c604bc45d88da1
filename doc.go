// Package acprpc is a JSON-RPC 2.0 connection for the Agent Client Protocol
// (ACP) that gets cancellation right: every request can be cancelled from
// either side, every request is answered exactly once, and nothing in flight
// is lost to a bad line, a slow handler or a vanished peer.
//
// # An agent and a client
//
// The packages acpv1 and acpv2 are ACP's messages as Go types, generated
// from the protocol's schema, with the handler sets Agent and Client and a
// typed Method for each of ACP's methods. An agent fills in the functions
// it serves and runs over stdio with ServeStdio:
//
//	agent := acpv1.Agent{SessionPrompt: func(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
//		reply := acpv1.AgentText(p.SessionID, "You said: "+acpv1.TextOf(p.Prompt))
//		err := acpv1.ToClient.SessionUpdate.Notify(ctx, acprpc.ConnFromContext(ctx), reply)
//		return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, err
//	}}
//	err := acprpc.ServeStdio(ctx, agent.Router(), nil)
//
// A client serves the agent's requests and notifications the same way, and
// calls it through a Conn; agentproc.Run starts the agent's process and
// gives the connection to its pipes:
//
//	client := acpv1.Client{SessionUpdate: func(ctx context.Context, n acpv1.SessionNotification) { ... }}
//	err := agentproc.Run(ctx, cmd, client.Router(), nil, func(ctx context.Context, conn *acprpc.Conn) error {
//		_, err := acpv1.ToAgent.Initialize.Call(ctx, conn, acpv1.InitializeRequest{ProtocolVersion: acpv1.Version})
//		...
//		_, err = acpv1.ToAgent.SessionPrompt.Call(ctx, conn, acpv1.TextPrompt(sessionID, "hello"))
//		return err
//	})
//
// # Connections and transports
//
// A Conn is one side of a connection, agent or client alike. It serves the
// peer's requests and notifications with a Handler, and makes its own calls
// with Call and Notify, which take any method and any JSON:
//
//	conn := acprpc.NewConn(ctx, acprpc.NewStreamPipes(os.Stdin, os.Stdout), handler, nil)
//	defer conn.Close()
//	var result acpv1.PromptResponse
//	err := conn.Call(ctx, "session/prompt", params, &result)
//
// A Conn runs over a Transport, which carries one whole message per Recv
// and per Send and knows nothing of JSON-RPC: a Stream for ACP's stdio
// framing, sourcegraph.Transport for sourcegraph/jsonrpc2's object
// streams, Pipe for two Conns in one process, and the remote package's WebSocket and
// Streamable HTTP. The Conn owns everything that decides what the peer sees
// (parsing, IDs, answers, cancellation, limits), the same over every
// transport. A client starts its agent with agentproc.Start. The zero Options are
// ready for ACP.
//
// A mistake in a call is refused before anything is sent, with an error
// that says what to do instead: a result that is not a pointer, params that
// are neither a JSON object nor an array, and, as ACP requires of clients,
// a session/new (or another method that opens or lists sessions) before the
// connection's initialize was answered.
//
// # Contexts and cancellation
//
// Each incoming request runs its handler on a goroutine of its own, with a
// context registered under the request's exact ID before the next message
// is read, so a $/cancel_request right behind its request always finds it.
// RequestFromContext and ConnFromContext give the handler its request and
// its connection; Options.HandlerContext adds the application's own values.
// The context ends with a cause that context.Cause returns and errors.Is
// recognises: ErrPeerCancelled ($/cancel_request), ErrSessionCancelled
// (session/cancel, session/close, CancelSession), ErrEntityCancelled (v2's
// tool_call/cancel and terminal/cancel), ErrDeadline
// (Options.HandlerTimeout), ErrShutdown (Shutdown), a cause given to
// CancelRequest, or ErrConnClosed. The cause recorded when the cancel
// arrives decides whether the request was cancelled.
//
// Outgoing calls cancel by context too: when the context given to Call ends
// before the answer, the peer is sent one $/cancel_request for that call. A
// handler that passes its own context to its calls cancels them all, each
// with its own $/cancel_request, however many hops the cascade has. A
// session/prompt's turn is cancelled as ACP's prompt-turn page prescribes,
// with session/cancel for its session and everything CancelSession does;
// the call then waits Options.TurnCancelWait for the agent's stop reason,
// "cancelled", which it returns as a result.
//
// # Exactly one answer
//
// Every request gets exactly one answer: the handler's result, also after a
// cancel; for a cancelled request whose handler fails, gives up
// (ErrCancelled) or outlives Options.CancelGrace, the method's cancellation
// marker (ACPCancelMarkers) or -32800; otherwise the code of the handler's
// own *Error, or -32603; -32601 for an unknown method and every "$/"
// request. A peer's error reached through a nested Call's *CallError is
// never passed on as this side's answer. Cancels for unknown or answered IDs
// are ignored, and no notification or answer is ever answered.
//
// # Typed methods
//
// A Router serves each method with a function of its own, its params
// decoded once into the function's parameter type; CallFor is Call with the
// result as a return value. A Method (or Notification) is a method's name
// with its types, so that its Call and Handle need neither: acpv1 and acpv2
// are built of them. ServeStdio and agentproc.Run run an agent's and a
// client's connection from start to end.
//
// # ACP versions
//
// A connection speaks one ACP version, which Conn.ProtocolVersion reports.
// An agent lists the versions it serves, with Options.SupportedVersions or
// by serving a VersionRouter (a handler per version), and its Conn
// negotiates the client's initialize itself. A client sets nothing: its
// Conn learns the version from the agent's initialize answer, as an
// agent's Conn does from its own answer when it negotiates nothing. Only
// an SDK that speaks one version whatever the exchange says pins it
// (Options.PinnedVersion), and only an application that negotiated outside
// the Conn sets it (Conn.SetProtocolVersion). On v2 a prompt's turn is the
// session's foreground Work, which ends with exactly one idle
// state_update; session/close is a request answered after it (on v1, after
// the requests it cancelled); tool_call/cancel and terminal/cancel cancel
// what CancellableToolCall and CancellableTerminal registered.
// docs/versions.md has the rules.
//
// # Ordering
//
// Requests run concurrently, up to Options.MaxConcurrentRequests if set.
// Notifications are handled one at a time in arrival order, on a goroutine
// of their own. Cancellations act on the read goroutine, ahead of every
// queue. An answer reaches its caller only after every notification the
// peer sent before it has been handled, so a prompt's session/updates are
// all seen before Call returns its result. Outgoing messages go out in the
// order they are sent, and a peer that stops reading never blocks a caller.
//
// # Bad input and limits
//
// A message that is not JSON is answered -32700, one that is not a usable
// request -32600, and one over Options.MaxMessageSize -32600 with its ID,
// without being held in memory; the connection goes on. IDs are sent back
// byte for byte; 1 and "1" are different requests, while 1, 1.0 and 1e0
// are one. What this side sends is checked too: invalid JSON is never
// written. Options bound every queue and table a peer can fill, and the
// full ones push back rather than drop: docs/reliability.md lists the
// bounds and what a peer can make one connection hold with the defaults.
//
// # Shutdown and close
//
// Shutdown is the graceful end, ACP's internal cancellation: every request
// in flight and every v2 work is cancelled with ErrShutdown and answered as
// cancelled, this side's calls are cancelled (a prompt's turn with
// session/cancel, any other call with its $/cancel_request), and the
// connection closes once all is sent or its context ends. Close is the
// immediate stop (a client's turns in flight are sent session/cancel on the
// way out): handlers' contexts end with ErrConnClosed, pending calls
// fail with an error that matches ErrConnClosed (which no answer of the
// peer's can) and says who closed the connection and why, as every later
// Call and Notify does, and Close returns promptly whatever the peer does.
//
// The end of the peer's input (a client that closes the agent's stdin) is
// the peer saying it will send nothing more, not that it stopped reading:
// what was read before it is served first, for up to
// Options.InputEndGrace (a second by default), with the connection open.
// The notifications are handled; every request is answered, with its
// handler's result, or as cancelled once the bound has passed; this side's
// pending calls fail at once, since no answer can come. Then the connection
// closes. Done fires then, with the last answers still being written:
// Close waits for them, and Serve and ServeStdio return only once they
// are. docs/design.md walks through all three ends.
package acprpc
