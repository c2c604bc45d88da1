package wiretest

import (
	"errors"
	"io"
	"net"
	"testing"

	"github.com/acpkit/acprpc"
)

// Transport is one way of carrying messages between a Conn and its peer.
// It sets Open or OpenMessages.
type Transport struct {
	Name string

	// Open, for a byte-stream framing (a line per message), returns the
	// Conn's transport and the peer's end of the stream: what the end
	// reads the Conn wrote, and what it writes the Conn reads, so a peer
	// can write half a line, blank lines or two lines at once. An end
	// with a CloseWrite method (as a *net.TCPConn has) can end the Conn's
	// input alone; its Close may be called more than once.
	Open func() (conn acprpc.Transport, end io.ReadWriteCloser, err error)

	// OpenMessages, for a transport that carries whole messages (the
	// client side of a WebSocket, say), returns the Conn's transport and
	// the peer's: the Peer sends each line as one message, byte for byte,
	// and reads each message as one line.
	OpenMessages func() (conn, peer acprpc.Transport, err error)

	capacity func(testing.TB) int // what the pipe holds, for os.Pipe
}

// open opens tr, with the peer's side as a stream of lines.
func (tr Transport) open() (acprpc.Transport, io.ReadWriteCloser, error) {
	if tr.Open != nil {
		return tr.Open()
	}
	if tr.OpenMessages == nil {
		return nil, nil, errors.New("it sets neither Open nor OpenMessages")
	}
	conn, peer, err := tr.OpenMessages()
	if err != nil {
		return nil, nil, err
	}
	return conn, endOf(peer), nil
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
	{Name: "os.Pipe", Open: openOSPipe, capacity: pipeCapacity},
	{Name: "net.Pipe", Open: openNetPipe},
	{Name: "io.Pipe", Open: openIOPipe},
	{Name: "acprpc.Pipe", OpenMessages: openInProcess},
}

// Streams are the byte-stream Transports, for a test of the line framing
// itself: Run(t, f, Streams...).
var Streams = append([]Transport(nil), Transports[:3]...)

// Run runs f once per transport, as a subtest named after it: over each of
// Transports, or of over when given (Streams..., say).
func Run(t *testing.T, f func(t *testing.T, tr Transport), over ...Transport) {
	t.Helper()
	if len(over) == 0 {
		over = Transports
	}
	for _, tr := range over {
		t.Run(tr.Name, func(t *testing.T) { f(t, tr) })
	}
}

func openOSPipe() (acprpc.Transport, io.ReadWriteCloser, error) {
	in, out, end, err := osPipes()
	if err != nil {
		return nil, nil, err
	}
	return acprpc.NewStreamPipes(in, out), end, nil
}

func openNetPipe() (acprpc.Transport, io.ReadWriteCloser, error) {
	a, b := net.Pipe()
	return acprpc.NewStream(a), &end{r: b, w: b, closeR: b.Close, closeW: b.Close}, nil
}

func openIOPipe() (acprpc.Transport, io.ReadWriteCloser, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	return acprpc.NewStreamPipes(inR, outW), &end{r: outR, w: inW, closeR: outR.Close, closeW: inW.Close}, nil
}

func openInProcess() (acprpc.Transport, acprpc.Transport, error) {
	conn, peer := acprpc.Pipe()
	return conn, peer, nil
}
