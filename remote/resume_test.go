package remote

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// cutProxy forwards TCP connections to a server, as a proxy between a
// client and the server would, and cuts the first connection that carries
// more than after bytes to the client (an SSE stream's: every other answer
// is short), both ways at once, as a proxy that ends long responses, or a
// network that changes, does. What the server wrote that the proxy had
// read but not passed on is gone.
type cutProxy struct {
	l     net.Listener
	to    string
	after int
	cut   chan struct{} // closed once the cut is made
	once  sync.Once
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startCutProxy(t *testing.T, to string, after int) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{l: l, to: to, after: after, cut: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.to)
		if err != nil {
			_ = down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(up, down)
			_ = up.Close()
		}()
		go func() {
			defer p.wg.Done()
			defer down.Close()
			defer up.Close()
			p.forward(down, up)
		}()
	}
}

// forward copies what the server sends to the client, and makes the cut.
func (p *cutProxy) forward(down, up net.Conn) {
	buf := make([]byte, 32<<10)
	passed := 0
	for {
		n, err := up.Read(buf)
		if n > 0 {
			cutHere := false
			if passed+n > p.after {
				p.once.Do(func() { cutHere = true })
			}
			if cutHere {
				_, _ = down.Write(buf[:p.after-passed]) // the rest of what was read is lost
				close(p.cut)
				return
			}
			if _, err := down.Write(buf[:n]); err != nil {
				return
			}
			passed += n
		}
		if err != nil {
			return
		}
	}
}

// A connection's SSE stream cut mid-turn, between the server and the
// client, is opened again by the client, and resumes where the client's
// reading stopped: nothing the server wrote into the cut connection is lost,
// nothing is read twice.
func TestHTTPStreamCutMidTurnResumesWithoutLossOrDuplicate(t *testing.T) {
	ts := startServer(t, nil)
	proxy := startCutProxy(t, ts.addr, 8<<10)
	client := dial(t, "http://"+proxy.l.Addr().String()+DefaultPath, nil)
	sent := make(chan error, 1)
	go func() { sent <- client.Send([]byte(initRequest)) }()
	server := ts.next(t)
	require.Equal(t, initRequest, recvMsg(t, server))
	send(t, server, initAnswer)
	require.NoError(t, <-sent)
	require.Equal(t, initAnswer, recvMsg(t, client))

	const updates = 400
	msg := func(n int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":%d,"pad":"%0100d"}}`, n, 0)
	}
	go func() {
		for n := range updates {
			if server.Send([]byte(msg(n))) != nil {
				return
			}
		}
		_ = server.Send([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}()
	var got []string
	for {
		m := recvMsg(t, client)
		if m == `{"jsonrpc":"2.0","id":1,"result":{}}` {
			break
		}
		got = append(got, m)
	}
	select {
	case <-proxy.cut:
	default:
		t.Fatal("the proxy never cut the stream")
	}
	seen := make(map[int]int)
	var order []int
	for _, m := range got {
		var n int
		_, err := fmt.Sscanf(m, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":%d,`, &n)
		require.NoError(t, err, m)
		seen[n]++
		order = append(order, n)
	}
	var lost, doubled []int
	for n := range updates {
		switch seen[n] {
		case 0:
			lost = append(lost, n)
		case 1:
		default:
			doubled = append(doubled, n)
		}
	}
	assert.Empty(t, lost, "updates lost by the cut")
	assert.Empty(t, doubled, "updates read twice after the cut")
	assert.IsIncreasing(t, order, "updates out of order")
}

// openConnectionStream opens a Streamable HTTP connection by hand, and its
// connection's stream, whose events (with their IDs, sseEventIDs) it
// returns with the connection's ID and its server-side transport.
func openConnectionStream(t *testing.T, opts *Options) (*rawHTTP, string, acprpc.Transport, <-chan string) {
	t.Helper()
	ts := startServer(t, opts)
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)
	get := c.open(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream")
	require.Equal(t, http.StatusOK, get.StatusCode)
	return c, id, server, sseEventIDs(get)
}

// A GET with Last-Event-ID takes the connection's stream over from the GET
// that holds it (whose connection a cut left for the server to notice), and
// starts after the event it names: the events written to the old GET after
// that come again, then the rest, each once. Without Last-Event-ID a second
// GET is still refused.
func TestHTTPResumingGetTakesTheStreamOver(t *testing.T) {
	c, id, server, oldEvents := openConnectionStream(t, nil)
	ctx := wiretest.Context(t)
	msg := func(n int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":{"n":%d}}`, n) }
	for n := 1; n <= 3; n++ {
		send(t, server, msg(n))
		assert.Equal(t, fmt.Sprintf("%d %s", n, msg(n)), wiretest.Recv(t, ctx, oldEvents))
	}

	resp, _ := c.do(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream")
	assert.Equal(t, http.StatusConflict, resp.StatusCode, "a second reader that resumes nothing")

	resumed := c.open(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Last-Event-ID", "1")
	require.Equal(t, http.StatusOK, resumed.StatusCode)
	events := sseEventIDs(resumed)
	for range oldEvents { // the old GET ends
	}
	send(t, server, msg(4))
	for n := 2; n <= 4; n++ {
		assert.Equal(t, fmt.Sprintf("%d %s", n, msg(n)), wiretest.Recv(t, ctx, events))
	}
	require.NoError(t, server.Close())
	for range events {
	}
}

// A GET that resumes after an event the server no longer keeps ends the
// connection (410): what came between is lost, and going on without it
// would break the order the client relies on. One that names an event
// never sent is refused (400).
func TestHTTPResumeThatCannotBeKeptEndsTheConnection(t *testing.T) {
	c, id, server, events := openConnectionStream(t, &Options{MaxQueuedBytes: 4 << 10}) // keeps 1 KiB
	ctx := wiretest.Context(t)
	pad := strings.Repeat("x", 200)
	for n := 1; n <= 10; n++ {
		send(t, server, fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":{"pad":%q}}`, pad))
		wiretest.Recv(t, ctx, events)
	}
	resp, body := c.do(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Last-Event-ID", "11")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	resp, body = c.do(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Last-Event-ID", "abc")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)

	resp, body = c.do(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Last-Event-ID", "2")
	assert.Equal(t, http.StatusGone, resp.StatusCode, body)
	_, err := recv(t, server)
	assert.ErrorIs(t, err, errResumeLost, "the connection ends, saying why")
	for range events {
	}
}

// The client's SSE reader knows the ID of each event it returns: the last
// "id:" field read before the event ends, as SSE has it (an event without
// one keeps the last).
func TestSSEReaderKeepsTheLastEventID(t *testing.T) {
	r := newSSEReader(strings.NewReader("id: 1\ndata: a\n\ndata: b\n\nid:7\ndata: c\n\n:\n\nid: 9\n\ndata: d\n\n"), 1000)
	for _, want := range []struct{ data, id string }{{"a", "1"}, {"b", "1"}, {"c", "7"}, {"d", "9"}} {
		data, err := r.next()
		require.NoError(t, err)
		assert.Equal(t, want.data, string(data))
		assert.Equal(t, want.id, string(r.lastID), "the ID of %q", want.data)
	}
	_, err := r.next()
	assert.ErrorIs(t, err, io.EOF)
}

// A server that ends the connection's stream at once, again and again,
// without a message, fails the client's transport after maxEmptyReopens
// tries, rather than have it open the stream in a loop.
func TestHTTPClientGivesUpOnAStreamEndedAtOnce(t *testing.T) {
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			w.Header().Set(HeaderConnectionID, "c1")
			_, _ = io.WriteString(w, initAnswer)
		case http.MethodGet:
			gets.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	client := dial(t, srv.URL, nil)
	require.NoError(t, client.Send([]byte(initRequest)))
	assert.Equal(t, initAnswer, recvMsg(t, client))
	_, err := recv(t, client)
	assert.ErrorContains(t, err, "the server keeps ending the SSE stream")
	assert.Equal(t, int32(maxEmptyReopens), gets.Load())
}
