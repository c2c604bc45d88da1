package remote

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// openHTTPPair connects a Streamable HTTP client transport to the server,
// through initialize, and returns both ends.
func openHTTPPair(t *testing.T, ts *testServer, opts *DialOptions) (client, server acprpc.Transport) {
	t.Helper()
	scheme := "http"
	if ts.opts.TLSConfig != nil {
		scheme = "https"
	}
	client = dial(t, ts.url(scheme), opts)
	sent := make(chan error, 1)
	go func() { sent <- client.Send([]byte(initRequest)) }()
	server = ts.next(t)
	assert.Equal(t, initRequest, recvMsg(t, server))
	send(t, server, initAnswer)
	require.NoError(t, <-sent)
	assert.Equal(t, initAnswer, recvMsg(t, client))
	return client, server
}

// perSessionStreams are DialOptions whose requests lose HeaderSingleStream,
// as those of a client that does not know it (the TypeScript SDK's), or
// behind a proxy that drops it: the server then sends each session's
// messages on a stream of the session's own.
func perSessionStreams(t testing.TB) *DialOptions {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &DialOptions{HTTPClient: &http.Client{Transport: withoutHeader{tr, HeaderSingleStream}}}
}

// withoutHeader is a RoundTripper that drops one header from every request.
type withoutHeader struct {
	rt   http.RoundTripper
	name string
}

func (w withoutHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get(w.name) != "" {
		r = r.Clone(r.Context())
		r.Header.Del(w.name)
	}
	return w.rt.RoundTrip(r)
}

// acprpc's client asks for one stream and gets it: every message of the
// agent comes on the connection's stream, in the order the agent sent it,
// whatever session it belongs to, and no session stream is opened.
func TestHTTPSingleStreamCarriesEverythingInOrder(t *testing.T) {
	ts := startServer(t, nil)
	client, server := openHTTPPair(t, ts, nil)
	require.True(t, client.(*httpClient).single, "the server said it sends everything on one stream")

	deliver(t, client, server, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	deliver(t, client, server, `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"old"}}`)
	deliver(t, client, server, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"old","prompt":[]}}`)
	sent := []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"new","n":0}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"new"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old","n":1}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"jsonrpc":"2.0","method":"_x/note","params":{}}`,
		`{"jsonrpc":"2.0","id":"p","method":"session/request_permission","params":{"sessionId":"old"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`,
	}
	for _, m := range sent {
		send(t, server, m)
	}
	for _, m := range sent {
		assert.Equal(t, m, recvMsg(t, client))
	}
	deliver(t, client, server, `{"jsonrpc":"2.0","id":"p","result":{"outcome":{"outcome":"cancelled"}}}`)

	c := client.(*httpClient)
	c.mu.Lock()
	assert.Len(t, c.sessions, 1, "the client opened no session stream")
	c.mu.Unlock()
	h := server.(*httpConn)
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Len(t, h.streams, 1, "no session stream was made")
	assert.Empty(t, h.routes, "no answer needs a route")
}

// A client that does not ask for one stream gets the RFD's routing: a
// stream per session, each in order, as the TypeScript server does it.
func TestHTTPRoutesEachMessageToItsStream(t *testing.T) {
	ts := startServer(t, nil)
	client, server := openHTTPPair(t, ts, perSessionStreams(t))
	h := server.(*httpConn)

	// session/new: the agent says something for the new session before
	// answering, while no stream for it is open; the message waits.
	deliver(t, client, server, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	early := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","n":0}}`
	send(t, server, early)
	send(t, server, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`)
	// The answer opens the session's stream, which delivers the early update.
	assert.ElementsMatch(t, []string{`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`, early},
		[]string{recvMsg(t, client), recvMsg(t, client)})

	// A prompt's updates and answer share the session's stream, in order.
	prompt := `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`
	deliver(t, client, server, prompt)
	permission := `{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1"}}`
	send(t, server, permission)
	assert.Equal(t, permission, recvMsg(t, client))
	deliver(t, client, server, `{"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"cancelled"}}}`)
	for i := range 50 {
		send(t, server, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","n":`+strconv.Itoa(i+1)+`}}`)
	}
	send(t, server, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`)
	for i := range 50 {
		assert.Equal(t, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","n":`+strconv.Itoa(i+1)+`}}`, recvMsg(t, client))
	}
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`, recvMsg(t, client),
		"the answer comes after every update sent before it")

	// A message leaves the queue just after it is written, so the client can
	// read it a moment before: wait for the queue to drain, room by room.
	drained := time.NewTimer(10 * time.Second)
	defer drained.Stop()
	for {
		h.mu.Lock()
		queued, room := h.queued, h.room
		h.mu.Unlock()
		if queued == 0 {
			break
		}
		select {
		case <-room:
		case <-drained.C:
			t.Fatalf("%d bytes still queued: not every message was written", queued)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Empty(t, h.routes, "every answer's route was used")
	assert.True(t, h.streams["s1"].receiver)
}

func TestHTTPAnswerFollowsTheRequestsSessionHeader(t *testing.T) {
	ts := startServer(t, nil)
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)

	// params.sessionId and Acp-Session-Id must agree.
	resp, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"a"}}`,
		HeaderConnectionID, id, HeaderSessionID, "b")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)

	// A request with the header alone has its answer on that session's stream.
	posted := make(chan int, 1)
	go func() {
		resp, _ := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"x"}`, HeaderConnectionID, id, HeaderSessionID, "b")
		posted <- resp.StatusCode
	}()
	assert.Equal(t, `{"jsonrpc":"2.0","id":4,"method":"x"}`, recvMsg(t, server))
	assert.Equal(t, http.StatusAccepted, <-posted, "once the Conn has the message")
	send(t, server, `{"jsonrpc":"2.0","id":4,"result":null}`)
	events := sseEvents(c.open(http.MethodGet, "", HeaderConnectionID, id, HeaderSessionID, "b", "Accept", "text/event-stream"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":4,"result":null}`, <-events)
	require.NoError(t, server.Close())
	for range events {
	}
}

func TestHTTPRefusesWhatIsNotAnACPMessage(t *testing.T) {
	ts := startServer(t, nil)
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)
	defer server.Close()

	for _, tc := range []struct {
		name, method, body string
		headers            []string
		status             int
	}{
		{"a batch", http.MethodPost, `[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, nil, http.StatusNotImplemented},
		{"not JSON", http.MethodPost, `{"jsonrpc":`, nil, http.StatusBadRequest},
		{"not an object", http.MethodPost, `42`, nil, http.StatusBadRequest},
		{"no connection ID", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"session/new"}`, nil, http.StatusBadRequest},
		{"initialize without an ID", http.MethodPost, `{"jsonrpc":"2.0","method":"initialize"}`, nil, http.StatusBadRequest},
		{"an unknown connection", http.MethodPost, `{"jsonrpc":"2.0","method":"n"}`, []string{HeaderConnectionID, "nope"}, http.StatusNotFound},
		{"initialize again", http.MethodPost, initRequest, []string{HeaderConnectionID, id}, http.StatusBadRequest},
		{"a GET without Accept", http.MethodGet, "", []string{HeaderConnectionID, id}, http.StatusNotAcceptable},
		{"a GET without an ID", http.MethodGet, "", []string{"Accept", "text/event-stream"}, http.StatusBadRequest},
		{"a GET of an unknown connection", http.MethodGet, "", []string{HeaderConnectionID, "nope", "Accept", "text/event-stream"}, http.StatusNotFound},
		{"a DELETE of an unknown connection", http.MethodDelete, "", []string{HeaderConnectionID, "nope"}, http.StatusNotFound},
		{"another method", http.MethodPut, "", nil, http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := c.do(tc.method, tc.body, tc.headers...)
			assert.Equal(t, tc.status, resp.StatusCode, body)
		})
	}
	t.Run("another content type", func(t *testing.T) {
		resp, _ := c.do(http.MethodPost, initRequest, "Content-Type", "text/plain")
		assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	})
	ts.noneAccepted(t)
}

func TestHTTPStreamHasOneReader(t *testing.T) {
	ts := startServer(t, nil)
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)
	first := c.open(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream")
	require.Equal(t, http.StatusOK, first.StatusCode)
	events := sseEvents(first)
	resp, _ := c.do(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream")
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	require.NoError(t, server.Close())
	for range events {
	}
}

func TestHTTPDeleteEndsTheConnection(t *testing.T) {
	ts := startServer(t, nil)
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)
	resp, _ := c.do(http.MethodDelete, "", HeaderConnectionID, id)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	_, err := recv(t, server)
	assert.ErrorIs(t, err, io.EOF)
	resp, _ = c.do(http.MethodPost, `{"jsonrpc":"2.0","method":"n"}`, HeaderConnectionID, id)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Zero(t, ts.Connections())
}

func TestHTTPClientCloseTellsTheServer(t *testing.T) {
	ts := startServer(t, nil)
	client, server := openHTTPPair(t, ts, nil)
	require.NoError(t, client.Close())
	_, err := recv(t, server)
	assert.ErrorIs(t, err, io.EOF)
	assert.Zero(t, ts.Connections())
	require.NoError(t, client.Close(), "closing twice is safe")
}

func TestHTTPServerCloseEndsTheClient(t *testing.T) {
	ts := startServer(t, nil)
	client, server := openHTTPPair(t, ts, nil)
	send(t, server, `{"jsonrpc":"2.0","method":"last"}`)
	require.NoError(t, server.Close())
	assert.Equal(t, `{"jsonrpc":"2.0","method":"last"}`, recvMsg(t, client), "what was queued is written first")
	_, err := recv(t, client)
	assert.ErrorIs(t, err, io.EOF)
	assert.Error(t, client.Send([]byte(`{"jsonrpc":"2.0","method":"n"}`)))
}

func TestHTTPClientAnswersARefusedRequest(t *testing.T) {
	ts := startServer(t, &Options{MaxMessageSize: 1000})
	client, server := openHTTPPair(t, ts, nil)
	big := `{"jsonrpc":"2.0","id":5,"method":"x","params":"` + strings.Repeat("a", 2000) + `"}`
	send(t, client, big)
	var answer struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Status int    `json:"status"`
				Body   string `json:"body"`
			} `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(recvMsg(t, client)), &answer))
	assert.Equal(t, 5, answer.ID)
	assert.EqualValues(t, acprpc.CodeInternalError, answer.Error.Code)
	assert.Equal(t, "HTTP 413 Request Entity Too Large", answer.Error.Message)
	assert.Equal(t, http.StatusRequestEntityTooLarge, answer.Error.Data.Status)

	deliver(t, client, server, `{"jsonrpc":"2.0","id":6,"method":"y"}`) // the connection goes on
}

func TestHTTPSlowReaderHoldsBoundedMemoryAndLosesNothing(t *testing.T) {
	const limit, n = 4096, 2000
	ts := startServer(t, &Options{MaxQueuedBytes: limit})
	client, server := openHTTPPair(t, ts, nil)
	h := server.(*httpConn)
	msg := func(i int) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":` + strconv.Itoa(i) + `,"pad":"` + strings.Repeat("x", 100) + `"}}`
	}
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			if err := server.Send([]byte(msg(i))); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	deliver(t, client, server, `{"jsonrpc":"2.0","method":"open","params":{"sessionId":"s"}}`) // opens the session's stream
	for i := range n {
		require.Equal(t, msg(i), recvMsg(t, client))
		h.mu.Lock()
		queued := h.queued
		h.mu.Unlock()
		require.LessOrEqual(t, queued, limit+len(msg(i)), "the queue never grows past its limit by more than one message")
	}
	require.NoError(t, <-sent)
}

func TestHTTPSSEKeepsAliveWhenIdle(t *testing.T) {
	ts := startServer(t, &Options{KeepAlive: 5 * time.Millisecond})
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)
	events := sseEvents(c.open(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream"))
	assert.Equal(t, "", <-events, "a keep-alive comment")
	send(t, server, `{"jsonrpc":"2.0","method":"n"}`)
	for e := range events {
		if e != "" {
			assert.Equal(t, `{"jsonrpc":"2.0","method":"n"}`, e)
			break
		}
	}
	require.NoError(t, server.Close())
	for range events {
	}
}

// TestHTTPStreamLeavesNetHTTPAndEndsWhenTheClientHangsUp opens the
// connection's SSE stream over HTTP/1.1: the stream runs on its connection
// taken from net/http, so its answer is not chunked (the body ends with the
// connection, which the answer says it closes). Messages flow on it; when
// the client hangs up, the server notices at once, without a write to fail:
// the stream is released, which starts the idle clock that then closes the
// connection.
func TestHTTPStreamLeavesNetHTTPAndEndsWhenTheClientHangsUp(t *testing.T) {
	const idle = 2 * time.Second // room for the GET after initialize on a loaded machine
	ts := startServer(t, &Options{IdleTimeout: idle})
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)
	resp := c.open(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 1, resp.ProtoMajor)
	assert.Empty(t, resp.TransferEncoding, "the body is not chunked: it ends with the connection")
	assert.True(t, resp.Close, "Connection: close")
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := sseEvents(resp)
	send(t, server, `{"jsonrpc":"2.0","method":"n"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","method":"n"}`, <-events)

	hungUp := time.Now()
	require.NoError(t, resp.Body.Close())
	for range events {
	}
	_, err := recv(t, server)
	require.ErrorContains(t, err, "no SSE stream open", "the stream was released when the client hung up")
	assert.Less(t, time.Since(hungUp), wait)
}

// TestHTTPStreamHoldsOneGoroutine: an open SSE stream over HTTP/1 costs the
// server one goroutine, which writes its events and, between them, waits
// for the client to hang up (net/http's would be two: the request's, and
// its watch on the connection).
func TestHTTPStreamHoldsOneGoroutine(t *testing.T) {
	const streams = 20
	ts := startServer(t, nil)
	ids := make([]string, streams)
	for i := range ids {
		c := newRawHTTP(t, ts.url("http"))
		ids[i], _ = c.initialize(ts)
		c.client.CloseIdleConnections()
	}
	awaitStillGoroutines()
	before := runtime.NumGoroutine()
	for _, id := range ids {
		conn := openStreamRaw(t, ts, id)
		defer conn.Close()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	awaitStillGoroutines()
	assert.Equal(t, streams, runtime.NumGoroutine()-before, "goroutines for %d open streams", streams)
}
