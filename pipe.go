package acprpc

import (
	"bytes"
	"io"
	"sync"
)

// Pipe returns the two ends of an in-process transport: what one end sends
// the other receives, message by message, with no framing, no system call
// and no copy beyond the one each message needs. It joins two Conns in one
// process, for tests and for SDKs that embed acprpc on both sides. Like
// net.Pipe it has no buffer: a Send waits for the other end's Recv, so a
// peer that stops reading holds back its writer and nobody else. Closing
// either end closes both: the other end's Recv then returns io.EOF.
func Pipe() (Transport, Transport) {
	ab, ba := make(chan []byte), make(chan []byte)
	shared := &pipeClose{closed: make(chan struct{})}
	return &pipeEnd{in: ba, out: ab, shut: shared}, &pipeEnd{in: ab, out: ba, shut: shared}
}

type pipeEnd struct {
	in   <-chan []byte
	out  chan<- []byte
	shut *pipeClose
	held [][]byte // messages trySend could not hand over, for Flush
}

// pipeClose is the pair's one close.
type pipeClose struct {
	once   sync.Once
	closed chan struct{}
}

func (p *pipeEnd) Recv() ([]byte, error) {
	select {
	case msg := <-p.in:
		return msg, nil
	case <-p.shut.closed:
		return nil, io.EOF
	}
}

func (p *pipeEnd) Send(msg []byte) error {
	if err := p.Flush(); err != nil {
		return err
	}
	return p.hand(bytes.Clone(msg)) // msg is the sender's until Send returns
}

// hand gives msg to the other end's Recv, waiting for it.
func (p *pipeEnd) hand(msg []byte) error {
	select {
	case p.out <- msg:
		return nil
	case <-p.shut.closed:
		return io.ErrClosedPipe
	}
}

// canTrySend reports that a Pipe can always try a Send.
func (p *pipeEnd) canTrySend() bool { return true }

// trySend hands msg over if the other end waits in Recv, and holds it for
// Flush otherwise; it reports whether it held it.
func (p *pipeEnd) trySend(msg []byte) (unflushed bool, err error) {
	msg = bytes.Clone(msg)
	if len(p.held) == 0 {
		select {
		case p.out <- msg:
			return false, nil
		case <-p.shut.closed:
			return false, io.ErrClosedPipe
		default:
		}
	}
	p.held = append(p.held, msg)
	return true, nil
}

// Flush hands over the messages trySend held, in order, waiting for the
// other end.
func (p *pipeEnd) Flush() error {
	for len(p.held) > 0 {
		if err := p.hand(p.held[0]); err != nil {
			return err
		}
		p.held[0] = nil
		p.held = p.held[1:]
	}
	p.held = nil
	return nil
}

func (p *pipeEnd) Close() error {
	p.shut.once.Do(func() { close(p.shut.closed) })
	return nil
}
