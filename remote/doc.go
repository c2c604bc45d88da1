// Package remote carries ACP over the network: the WebSocket and Streamable
// HTTP transports of ACP's remote-transport RFD, as the official TypeScript
// SDK speaks them, for acprpc Conns. It is a module of its own, so that an
// agent on stdio never depends on a WebSocket library.
//
// A Server serves ACP at one endpoint (by default /acp) over both
// transports, each connection its own Conn:
//
//	srv := remote.NewServer(remote.Handle(handler, nil), nil)
//	err := srv.ListenAndServe("127.0.0.1:8080") // ws://127.0.0.1:8080/acp and http://127.0.0.1:8080/acp
//
// Dial connects to one, by the URL's scheme (ws, wss, http or https), and
// returns the acprpc.Transport a client's Conn runs over:
//
//	t, err := remote.Dial(ctx, "ws://127.0.0.1:8080/acp", nil)
//	conn := acprpc.NewConn(ctx, t, clientHandler, nil)
//
// Server.Shutdown stops a server gracefully, as a replica behind a load
// balancer must: new connections are refused with 503 while each open one
// is shut down by its Conn (everything in flight answered as cancelled),
// then the server closes; Close is the immediate stop.
//
// Every guarantee of a Conn holds on both transports as on stdio: each
// request is answered exactly once, a cancel right behind its request finds
// it, session/update notifications come before the answer they precede, and
// a peer that vanishes ends every handler's context with ErrConnClosed. Over
// Streamable HTTP the order across a session's stream and the connection's
// needs both ends to be acprpc's (HeaderSingleStream): with another peer, a
// stream per session orders each stream alone.
//
// # Security
//
// The defaults are for an agent on the user's own machine: connections from
// loopback addresses only, Host headers that name this machine only (against
// DNS rebinding), no pages from other origins (a browser's cross-site
// WebSocket or fetch), and bounds on connections, message sizes, queued
// output, sessions, the POSTs waiting for a connection, silence, slow
// headers, slow bodies and slow readers, each with a default. Options
// widen each one, add authentication (BearerToken) and TLS.
//
// See docs/transports.md in the repository for the wire details, the
// defaults and the figures.
package remote
