package wiretest

import (
	"errors"
	"io"
	"os"
	"sync"
	"testing"
)

// end is the peer's side of a byte stream: what it reads is what the Conn
// wrote, and what it writes the Conn reads. Each of its halves closes
// once, however often it is asked.
type end struct {
	r io.Reader
	w io.Writer

	closeR, closeW func() error
	once           sync.Once
	wOnce          sync.Once
	err            error
}

func (e *end) Read(p []byte) (int, error)  { return e.r.Read(p) }
func (e *end) Write(p []byte) (int, error) { return e.w.Write(p) }

// CloseWrite ends the Conn's input. On a transport without half close
// (net.Pipe) the whole end closes.
func (e *end) CloseWrite() error {
	var err error
	e.wOnce.Do(func() { err = e.closeW() })
	return err
}

// Close closes both directions.
func (e *end) Close() error {
	e.once.Do(func() {
		e.err = errors.Join(e.CloseWrite(), e.closeR())
	})
	return e.err
}

// halfCloser is an end that can end the Conn's input alone.
type halfCloser interface{ CloseWrite() error }

// osPipes makes two os.Pipes: the Conn's input and output, and the peer's
// end of both.
func osPipes() (in, out *os.File, peer *end, err error) {
	inR, inW, err := os.Pipe() // peer → Conn
	if err != nil {
		return nil, nil, nil, err
	}
	outR, outW, err := os.Pipe() // Conn → peer
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, err
	}
	return inR, outW, &end{r: outR, w: inW, closeR: outR.Close, closeW: inW.Close}, nil
}

// RawPipe is os.Pipe for a peer that is not a Conn: another JSON-RPC
// engine reads and writes conn, which frames messages itself, and the
// scripted Peer speaks to it from the other end. Closing conn closes the
// engine's two pipe ends; the test's cleanup closes the Peer.
func RawPipe(t testing.TB) (conn io.ReadWriteCloser, p *Peer) {
	t.Helper()
	in, out, peer, err := osPipes()
	if err != nil {
		t.Fatalf("wiretest: os.Pipe: %v", err)
	}
	return rawPipe{in, out}, newPeer(t, peer)
}

type rawPipe struct{ in, out *os.File }

func (p rawPipe) Read(b []byte) (int, error)  { return p.in.Read(b) }
func (p rawPipe) Write(b []byte) (int, error) { return p.out.Write(b) }
func (p rawPipe) Close() error                { return errors.Join(p.out.Close(), p.in.Close()) }

// EOFWatch is a Conn's end of a byte stream that tells when a read of it
// has reached the end of the input: a handler that waits for Seen returns
// only once the Conn is reading the peer's close, slower than the close.
type EOFWatch struct {
	io.ReadWriteCloser
	once sync.Once
	seen chan struct{}
}

// WatchEOF watches rwc's reads for the end of the input.
func WatchEOF(rwc io.ReadWriteCloser) *EOFWatch {
	return &EOFWatch{ReadWriteCloser: rwc, seen: make(chan struct{})}
}

// Seen is closed once a read has returned io.EOF.
func (e *EOFWatch) Seen() <-chan struct{} { return e.seen }

func (e *EOFWatch) Read(p []byte) (int, error) {
	n, err := e.ReadWriteCloser.Read(p)
	if err == io.EOF {
		e.once.Do(func() { close(e.seen) })
	}
	return n, err
}
