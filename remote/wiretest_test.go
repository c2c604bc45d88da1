package remote

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// remoteTransports are the remote transports as wiretest Transports, so the
// kit's scripted conversations run over them as over pipes: each Open
// starts a Server of its own on loopback, dials it, and plays the opening
// initialize itself (the remote transports' rule), dropping its answer, so
// the script starts on a connection that is already open.
var remoteTransports = []wiretest.Transport{
	{Name: "websocket", OpenMessages: func() (acprpc.Transport, acprpc.Transport, error) { return openRemote("ws") }},
	{Name: "streamable-http", OpenMessages: func() (acprpc.Transport, acprpc.Transport, error) { return openRemote("http") }},
}

// openRemote returns the server's transport and the client's, opened.
func openRemote(scheme string) (acprpc.Transport, acprpc.Transport, error) {
	accepted := make(chan acprpc.Transport, 1)
	srv := NewServer(func(t acprpc.Transport, _ *http.Request) { accepted <- t }, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	stop := func() { _ = srv.Close(); <-served }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := Dial(ctx, scheme+"://"+l.Addr().String()+DefaultPath, nil)
	if err != nil {
		stop()
		return nil, nil, err
	}
	opened := &opened{Transport: client, sent: make(chan struct{}), stop: stop}
	go func() {
		opened.sendErr = client.Send([]byte(initRequest)) // over HTTP, it returns once the Conn has answered
		close(opened.sent)
	}()
	select {
	case server := <-accepted:
		return server, opened, nil
	case <-ctx.Done():
		_ = opened.Close()
		return nil, nil, errors.New("remote: the server accepted no connection")
	}
}

// opened is a client transport whose initialize is on its way: the
// script's messages wait for it to have been sent, its answer is dropped,
// and Close stops the server too.
type opened struct {
	acprpc.Transport
	sent      chan struct{} // closed once initialize is sent
	sendErr   error
	answered  bool
	stop      func()
	closeOnce bool
}

// initialized waits for the initialize to have been sent.
func (o *opened) initialized() error {
	select {
	case <-o.sent:
		return o.sendErr
	case <-time.After(10 * time.Second):
		return errors.New("remote: initialize was never sent")
	}
}

func (o *opened) Send(msg []byte) error {
	if err := o.initialized(); err != nil {
		return err
	}
	return o.Transport.Send(msg)
}

// initKey is the key of initialize's ID in these scripts.
var initKey = acprpc.Int64ID(0).Key()

// Recv drops the answer to initialize (ID 0), which may come after the
// answers to the script's first requests: the Conn answers concurrently.
func (o *opened) Recv() ([]byte, error) {
	for {
		msg, err := o.Transport.Recv()
		if err != nil {
			return nil, err
		}
		if key, ok := peek(msg).answeredKey(); !o.answered && ok && key == initKey {
			o.answered = true
			continue
		}
		return msg, nil
	}
}

func (o *opened) Close() error {
	err := o.Transport.Close()
	if !o.closeOnce {
		o.closeOnce = true
		o.stop()
	}
	return err
}
