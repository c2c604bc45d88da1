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
	{Name: "websocket", Open: func() (acprpc.Transport, *wiretest.End, error) { return openRemote("ws") }},
	{Name: "streamable-http", Open: func() (acprpc.Transport, *wiretest.End, error) { return openRemote("http") }},
}

func openRemote(scheme string) (acprpc.Transport, *wiretest.End, error) {
	accepted := make(chan acprpc.Transport, 1)
	srv := NewServer(func(t acprpc.Transport, _ *http.Request) { accepted <- t }, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	stop := func() { _ = srv.Close(); <-served }
	ctx, cancel := context.WithTimeout(context.Background(), wiretest.Timeout)
	defer cancel()
	client, err := Dial(ctx, scheme+"://"+l.Addr().String()+DefaultPath, nil)
	if err != nil {
		stop()
		return nil, nil, err
	}
	opened := &opened{Transport: client, sent: make(chan error, 1), stop: stop}
	go func() { opened.sent <- client.Send([]byte(initRequest)) }()
	select {
	case server := <-accepted:
		return server, wiretest.EndOf(opened), nil
	case <-ctx.Done():
		_ = opened.Close()
		return nil, nil, errors.New("remote: the server accepted no connection")
	}
}

// opened is a client transport whose initialize has been sent: its first
// Recv drops the answer, and Close stops the server too.
type opened struct {
	acprpc.Transport
	sent      chan error
	answered  bool
	stop      func()
	closeOnce bool
}

func (o *opened) Recv() ([]byte, error) {
	if !o.answered {
		o.answered = true
		select {
		case err := <-o.sent:
			if err != nil {
				return nil, err
			}
		case <-time.After(wiretest.Timeout):
			return nil, errors.New("remote: initialize was never sent")
		}
		if _, err := o.Transport.Recv(); err != nil {
			return nil, err
		}
	}
	return o.Transport.Recv()
}

func (o *opened) Close() error {
	err := o.Transport.Close()
	if !o.closeOnce {
		o.closeOnce = true
		o.stop()
	}
	return err
}
