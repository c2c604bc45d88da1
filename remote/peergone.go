package remote

// peerGone is the end of a transport's input over which nothing more can
// reach the peer: acprpc.Transport's Recv error with PeerGone, on which the
// Conn closes once the notifications read before are handled, without
// waiting Options.InputEndGrace to answer requests that no answer could
// reach. Every end of input of both transports is one: neither has a half
// close. A WebSocket close frame is echoed at once and the socket closed
// (coder/websocket does so as it reads the frame, and a browser drops what
// comes after its own close), a socket that drops carries nothing more,
// and a Streamable HTTP connection ends both ways at once (the client's
// DELETE, the server's 404). A Streamable HTTP stream that is cut is no end
// of input: the client opens it again, resuming it.
type peerGone struct{ error }

func (e peerGone) Unwrap() error { return e.error }

// PeerGone says that the peer reads nothing more this transport sends.
func (peerGone) PeerGone() bool { return true }
