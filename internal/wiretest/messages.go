package wiretest

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/acpkit/acprpc"
)

// EndOf is an End over a transport that carries whole messages rather
// than lines, such as the client side of a WebSocket or Streamable HTTP
// connection: each line written to the End is sent as one message, byte
// for byte, and each message received is read from the End as one line. A
// scripted Peer over it speaks to a Conn on the far side of that transport.
//
// Closing the End closes the transport. A transport whose Recv fails ends
// the End's input with that error (io.EOF for a normal end).
func EndOf(tr acprpc.Transport) *End {
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
				return // the End was closed
			}
		}
	}()
	closeTransport := sync.OnceValue(tr.Close)
	return &End{
		R:      pr,
		W:      &lineSender{tr: tr},
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
