package remote

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return startServerOn(t, opts, l)
}

// startServerOn is startServer on a listener of the test's own.
func startServerOn(t testing.TB, opts *Options, l net.Listener) *testServer {
	t.Helper()
	ts := &testServer{accepted: make(chan acprpc.Transport, 64), requests: make(chan *http.Request, 64)}
	ts.Server = NewServer(func(tr acprpc.Transport, r *http.Request) {
		ts.accepted <- tr
		ts.requests <- r
	}, opts)
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

// send sends msg and flushes it, as a Conn does once its queue runs dry:
// a server's WebSocket gathers what is sent until then.
func send(t testing.TB, tr acprpc.Transport, msg string) {
	t.Helper()
	require.NoError(t, sendFlushed(tr, []byte(msg)))
}

// sendFlushed is Send followed by the transport's Flush, if it has one.
func sendFlushed(tr acprpc.Transport, msg []byte) error {
	if err := tr.Send(msg); err != nil {
		return err
	}
	if f, ok := tr.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// initRequest is the first message of every connection.
const initRequest = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`

// rawHTTP makes plain HTTP requests to a server, as a client library
// would, for the tests that look at statuses and headers.
type rawHTTP struct {
	t      testing.TB
	url    string
	client *http.Client
}

func newRawHTTP(t testing.TB, url string) *rawHTTP {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawHTTP{t: t, url: url, client: &http.Client{Transport: tr}}
}

// do sends one request; headers are name, value pairs. The response's body
// is read whole and closed, unless stream is set.
func (c *rawHTTP) do(method, body string, headers ...string) (*http.Response, string) {
	c.t.Helper()
	resp := c.open(method, body, headers...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, string(b)
}

// open sends one request and returns the response with its body unread.
func (c *rawHTTP) open(method, body string, headers ...string) *http.Response {
	c.t.Helper()
	resp, err := c.try(method, body, headers...)
	require.NoError(c.t, err)
	return resp
}

// try sends one request and returns the response with its body unread, or
// the error of a request that got none.
func (c *rawHTTP) try(method, body string, headers ...string) (*http.Response, error) {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	c.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, c.url, r)
	require.NoError(c.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.client.Do(req)
}

// initialize opens a Streamable HTTP connection by hand: it POSTs
// initialize, plays the server's Conn for its answer, and returns the
// connection's ID and its server-side transport.
func (c *rawHTTP) initialize(ts *testServer) (string, acprpc.Transport) {
	c.t.Helper()
	answer, server := c.initializeWith(ts)
	return answer.Get(HeaderConnectionID), server
}

// initializeWith is initialize with headers (name, value pairs) on the
// POST, and returns the answer's headers.
func (c *rawHTTP) initializeWith(ts *testServer, headers ...string) (http.Header, acprpc.Transport) {
	c.t.Helper()
	type answer struct {
		resp *http.Response
		body string
	}
	got := make(chan answer, 1)
	go func() {
		resp, body := c.do(http.MethodPost, initRequest, headers...)
		got <- answer{resp, body}
	}()
	server := ts.next(c.t)
	require.Equal(c.t, initRequest, recvMsg(c.t, server))
	send(c.t, server, initAnswer)
	a := <-got
	require.Equal(c.t, http.StatusOK, a.resp.StatusCode, a.body)
	require.Equal(c.t, initAnswer, a.body)
	return a.resp.Header, server
}

// sseEvents reads a GET's SSE response, sending each event's data and each
// keep-alive ("") on the channel it returns, which closes with the stream.
func sseEvents(resp *http.Response) <-chan string { return readSSE(resp, false) }

// sseEventIDs is sseEvents with each event's "id:" before its data, and a
// space between, and no keep-alives.
func sseEventIDs(resp *http.Response) <-chan string { return readSSE(resp, true) }

func readSSE(resp *http.Response, ids bool) <-chan string {
	out := make(chan string, 1024)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		id := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: ") && ids:
				out <- id + " " + strings.TrimPrefix(line, "data: ")
			case strings.HasPrefix(line, "data: "):
				out <- strings.TrimPrefix(line, "data: ")
			case line == ":" && !ids:
				out <- ""
			}
		}
	}()
	return out
}

const initAnswer = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`

// deliver sends msg from one end and checks that the other receives it.
// The send runs beside the receive: a Streamable HTTP POST returns only
// once the server's side has taken the message, as a Conn always does.
func deliver(t testing.TB, from, to acprpc.Transport, msg string) {
	t.Helper()
	sent := make(chan error, 1)
	go func() { sent <- sendFlushed(from, []byte(msg)) }()
	got, err := recv(t, to)
	require.NoError(t, err)
	require.Equal(t, msg, string(got))
	require.NoError(t, <-sent)
}
