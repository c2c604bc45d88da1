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
	select {
	case p.out <- bytes.Clone(msg): // msg is the sender's until Send returns
		return nil
	case <-p.shut.closed:
		return io.ErrClosedPipe
	}
}

func (p *pipeEnd) Close() error {
	p.shut.once.Do(func() { close(p.shut.closed) })
	return nil
}
