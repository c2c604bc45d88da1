package wiretest

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/acpkit/acprpc"
)

// Transport is one way of carrying messages between a Conn and its peer.
type Transport struct {
	Name string
	// Stream is set for a byte-stream framing (a line per message), where
	// a peer can write half a line, blank lines or two lines at once; a
	// test of the framing itself runs over these only (Streams).
	Stream bool
	// Open returns the Conn's transport and the peer's end of it.
	Open func() (acprpc.Transport, *End, error)

	capacity func(testing.TB) int // what the pipe holds, for os.Pipe
}

// Capacity returns how many bytes the transport holds while its reader
// reads nothing, measured on a fresh pipe, for a test of a writer that
// must block; it fails the test for a transport that does not know.
func (tr Transport) Capacity(t testing.TB) int {
	t.Helper()
	if tr.capacity == nil {
		t.Fatalf("wiretest: %s has no known capacity", tr.Name)
	}
	return tr.capacity(t)
}

// Transports are the framings every conversation test runs over: os.Pipe
// (kernel pipes with a buffer), net.Pipe (synchronous, one full-duplex
// connection), io.Pipe (synchronous, in memory) and acprpc.Pipe (messages,
// no framing). os.Pipe comes first: a test that needs only one runs over
// Transports[0].
var Transports = []Transport{
	{Name: "os.Pipe", Stream: true, Open: openOSPipe, capacity: pipeCapacity},
	{Name: "net.Pipe", Stream: true, Open: openNetPipe},
	{Name: "io.Pipe", Stream: true, Open: openIOPipe},
	{Name: "acprpc.Pipe", Open: openInProcess},
}

// Streams are the byte-stream Transports, for a test of the line framing
// itself: Run(t, f, Streams...).
var Streams = append([]Transport(nil), Transports[:3]...)

// BreakingAfter is os.Pipe with the Conn's output passing its first n
// bytes and failing every write after them (with "wiretest: output
// broken"), as a pipe whose reader died mid-line does.
func BreakingAfter(n int) Transport {
	return Transport{Name: "os.Pipe", Stream: true, Open: func() (acprpc.Transport, *End, error) {
		in, out, end, err := osPipes()
		if err != nil {
			return nil, nil, err
		}
		return acprpc.NewStreamPipes(in, &failAfter{w: out, left: n}), end, nil
	}}
}

// End is the peer's side of a transport: what it reads is what the Conn
// wrote, and what it writes the Conn reads.
type End struct {
	R io.Reader
	W io.Writer

	closeR, closeW func() error
	once           sync.Once
	wOnce          sync.Once
	err            error
}

// CloseWrite ends the Conn's input. On a transport without half close
// (net.Pipe) the whole end closes.
func (e *End) CloseWrite() error {
	var err error
	e.wOnce.Do(func() { err = e.closeW() })
	return err
}

// Close closes both directions; it is safe to call more than once.
func (e *End) Close() error {
	e.once.Do(func() {
		e.err = errors.Join(e.CloseWrite(), e.closeR())
	})
	return e.err
}

func openOSPipe() (acprpc.Transport, *End, error) {
	in, out, end, err := osPipes()
	if err != nil {
		return nil, nil, err
	}
	return acprpc.NewStreamPipes(in, out), end, nil
}

// osPipes makes two os.Pipes: the Conn's input and output, and the peer's
// End of both.
func osPipes() (in, out *os.File, end *End, err error) {
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
	return inR, outW, &End{R: outR, W: inW, closeR: outR.Close, closeW: inW.Close}, nil
}

func openNetPipe() (acprpc.Transport, *End, error) {
	a, b := net.Pipe()
	return acprpc.NewStream(a), &End{R: b, W: b, closeR: b.Close, closeW: b.Close}, nil
}

func openIOPipe() (acprpc.Transport, *End, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	return acprpc.NewStreamPipes(inR, outW), &End{R: outR, W: inW, closeR: outR.Close, closeW: inW.Close}, nil
}

func openInProcess() (acprpc.Transport, *End, error) {
	conn, peer := acprpc.Pipe()
	return conn, EndOf(peer), nil
}

// RawPipe is os.Pipe for a peer that is not a Conn: another JSON-RPC engine
// reads and writes conn, which frames messages itself, and the scripted
// Peer reads and writes end. Closing conn closes the engine's two pipe ends.
func RawPipe() (conn io.ReadWriteCloser, end *End, err error) {
	in, out, end, err := osPipes()
	if err != nil {
		return nil, nil, err
	}
	return rawPipe{in, out}, end, nil
}

type rawPipe struct{ in, out *os.File }

func (p rawPipe) Read(b []byte) (int, error)  { return p.in.Read(b) }
func (p rawPipe) Write(b []byte) (int, error) { return p.out.Write(b) }
func (p rawPipe) Close() error                { return errors.Join(p.out.Close(), p.in.Close()) }
