package demo

import "github.com/acpkit/acprpc"

// Transport records every message that tr carries, each as one line of the
// timeline: what it receives as going from the agent to the client, what it
// sends as going the other way. It taps a client's side of a WebSocket or
// Streamable HTTP connection as Reader and Writer tap a pipe.
func (rec *Recorder) Transport(tr acprpc.Transport) acprpc.Transport {
	return &tapTransport{Transport: tr, rec: rec}
}

type tapTransport struct {
	acprpc.Transport
	rec *Recorder
}

func (t *tapTransport) Recv() ([]byte, error) {
	msg, err := t.Transport.Recv()
	if err == nil {
		t.rec.see(AgentToClient, append(msg[:len(msg):len(msg)], '\n'))
	}
	return msg, err
}

func (t *tapTransport) Send(msg []byte) error {
	t.rec.see(ClientToAgent, append(msg[:len(msg):len(msg)], '\n')) // before the send: the answer may come before it returns
	return t.Transport.Send(msg)
}

// SetReadLimit passes the Conn's limit on to the transport.
func (t *tapTransport) SetReadLimit(n int) {
	if l, ok := t.Transport.(interface{ SetReadLimit(int) }); ok {
		l.SetReadLimit(n)
	}
}
