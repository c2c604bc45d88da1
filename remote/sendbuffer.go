package remote

import "net"

// boundSendBuffer sets the kernel's send buffer of c, the server's side of
// a WebSocket connection or an SSE stream, to n bytes (Options.SendBuffer;
// not when negative), when c is a socket or TLS over one. The system's own
// buffer grows with the connection's pace, to megabytes: a client that
// reads slowly would find that much of the agent's stream ahead of a
// cancel's answer, all of it counted as written by the Conn, and so
// beyond the bound on its unsent notifications.
func boundSendBuffer(c net.Conn, n int) {
	if n <= 0 {
		return
	}
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		c = tc.NetConn()
	}
	if s, ok := c.(interface{ SetWriteBuffer(int) error }); ok {
		_ = s.SetWriteBuffer(n) // a socket that refuses keeps its own
	}
}
