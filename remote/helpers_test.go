package remote

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// wait bounds every wait of a test, so a broken transport fails the test
// instead of hanging it.
const wait = 10 * time.Second

// testServer is a Server listening on loopback, whose accepted transports
// arrive on a channel.
type testServer struct {
	*Server
	addr     string // host:port
	accepted chan acprpc.Transport
	requests chan *http.Request // the request of each accepted connection
}

func startServer(t testing.TB, opts *Options) *testServer {
	t.Helper()
	ts := &testServer{accepted: make(chan acprpc.Transport, 64), requests: make(chan *http.Request, 64)}
	ts.Server = NewServer(func(tr acprpc.Transport, r *http.Request) {
		ts.accepted <- tr
		ts.requests <- r
	}, opts)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ts.addr = l.Addr().String()
	served := make(chan error, 1)
	go func() { served <- ts.Serve(l) }()
	t.Cleanup(func() {
		require.NoError(t, ts.Close())
		require.ErrorIs(t, <-served, http.ErrServerClosed)
	})
	return ts
}

func (ts *testServer) url(scheme string) string {
	path := DefaultPath
	if ts.opts.Path != "" {
		path = ts.opts.Path
	}
	return scheme + "://" + ts.addr + path
}

// next returns the next accepted transport.
func (ts *testServer) next(t testing.TB) acprpc.Transport {
	t.Helper()
	select {
	case tr := <-ts.accepted:
		<-ts.requests
		return tr
	case <-time.After(wait):
		t.Fatal("no connection was accepted")
		return nil
	}
}

// noneAccepted checks that the server handed no connection to its
// AcceptFunc.
func (ts *testServer) noneAccepted(t testing.TB) {
	t.Helper()
	select {
	case tr := <-ts.accepted:
		_ = tr.Close()
		t.Fatal("a connection was accepted")
	default:
	}
}

// dial connects to the server at scheme and closes the transport with the
// test.
func dial(t testing.TB, rawURL string, opts *DialOptions) acprpc.Transport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tr, err := Dial(ctx, rawURL, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// recv is Recv bounded by the test's wait.
func recv(t testing.TB, tr acprpc.Transport) ([]byte, error) {
	t.Helper()
	type result struct {
		msg []byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		m, err := tr.Recv()
		got <- result{m, err}
	}()
	select {
	case r := <-got:
		return r.msg, r.err
	case <-time.After(wait):
		_ = tr.Close()
		<-got
		t.Fatal("Recv did not return")
		return nil, nil
	}
}

// recvMsg receives one message and fails the test on an error.
func recvMsg(t testing.TB, tr acprpc.Transport) string {
	t.Helper()
	m, err := recv(t, tr)
	require.NoError(t, err)
	return string(m)
}

func send(t testing.TB, tr acprpc.Transport, msg string) {
	t.Helper()
	require.NoError(t, tr.Send([]byte(msg)))
}

// initRequest is the first message of every connection.
const initRequest = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`
