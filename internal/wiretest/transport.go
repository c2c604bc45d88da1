// Package wiretest is the test kit of acprpc's behavioural tests: a scripted
// raw peer that writes and reads JSON-RPC lines byte for byte, the framings
// a conversation runs over, and Conn-to-Conn links whose lines are recorded.
package wiretest

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"

	"github.com/acpkit/acprpc"
)

// Transport is one way of carrying lines between a Conn and its peer.
type Transport struct {
	Name string
	// Open returns the Conn's stream and the other end of the same pipes.
	Open func() (*acprpc.Stream, *End, error)
}

// Transports are the framings every conversation test runs over:
// os.Pipe (kernel pipes with a buffer), net.Pipe (synchronous, one full
// duplex connection) and io.Pipe (synchronous, in memory).
var Transports = []Transport{
	{Name: "os.Pipe", Open: openOSPipe},
	{Name: "net.Pipe", Open: openNetPipe},
	{Name: "io.Pipe", Open: openIOPipe},
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

func openOSPipe() (*acprpc.Stream, *End, error) {
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

func openNetPipe() (*acprpc.Stream, *End, error) {
	a, b := net.Pipe()
	return acprpc.NewStream(a), &End{R: b, W: b, closeR: b.Close, closeW: b.Close}, nil
}

func openIOPipe() (*acprpc.Stream, *End, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	return acprpc.NewStreamPipes(inR, outW), &End{R: outR, W: inW, closeR: outR.Close, closeW: inW.Close}, nil
}
