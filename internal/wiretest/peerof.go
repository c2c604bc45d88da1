package wiretest

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/acpkit/acprpc"
)

// PeerOf returns a scripted Peer over a transport that carries whole
// messages rather than lines, such as the client side of a WebSocket or
// Streamable HTTP connection, speaking to a Conn on its far side: each line
// the Peer sends is one message, byte for byte, and each message received
// is one line it reads. A transport whose Recv fails ends the Peer's input
// with that error (io.EOF for a normal end). The test's cleanup closes the
// Peer, which closes the transport.
func PeerOf(t testing.TB, tr acprpc.Transport) *Peer { return newPeer(t, endOf(tr)) }

// endOf is the peer's side of a transport of messages, as a stream of
// lines; closing it closes the transport.
func endOf(tr acprpc.Transport) *end {
	pr, pw := io.Pipe()
	received := make(chan struct{})
	go func() {
		defer close(received)
		for {
			msg, err := tr.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				pw.CloseWithError(err)
				return
			}
			if _, err := pw.Write(append(msg, '\n')); err != nil {
				return // the end was closed
			}
		}
	}()
	closeTransport := sync.OnceValue(tr.Close)
	return &end{
		r:      pr,
		w:      &lineSender{tr: tr},
		closeW: closeTransport,
		closeR: func() error {
			err := closeTransport()
			pr.Close()
			<-received
			return err
		},
	}
}

// lineSender sends each complete line written to it as one message, its
// "\n" taken off; a partial line waits for the rest.
type lineSender struct {
	tr      acprpc.Transport
	mu      sync.Mutex
	partial []byte
}

func (s *lineSender) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := append(s.partial, p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		if err := s.tr.Send(buf[:i]); err != nil {
			s.partial = nil
			return 0, err
		}
		buf = buf[i+1:]
	}
	s.partial = append([]byte(nil), buf...)
	return len(p), nil
}
