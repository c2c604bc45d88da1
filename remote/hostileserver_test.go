package remote

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lyingServer is a Streamable HTTP server that answers initialize, then
// writes whatever the test puts on events to the connection's SSE stream,
// and counts the GETs of each session stream the client opens.
type lyingServer struct {
	*httptest.Server
	events chan string // the connection stream's events
	posted chan string // the bodies of the POSTs after initialize

	mu   sync.Mutex
	gets map[string]int // by Acp-Session-Id
}

func startLyingServer(t *testing.T) *lyingServer {
	ls := &lyingServer{events: make(chan string, 4096), posted: make(chan string, 64), gets: make(map[string]int)}
	ls.Server = httptest.NewServer(http.HandlerFunc(ls.serve))
	t.Cleanup(ls.Close)
	t.Cleanup(func() { close(ls.events) })
	return ls
}

func (ls *lyingServer) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.Header.Get(HeaderConnectionID) == "":
		w.Header().Set(HeaderConnectionID, "c1")
		_, _ = io.WriteString(w, initAnswer)
	case r.Method == http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		ls.posted <- string(body)
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodGet:
		session := r.Header.Get(HeaderSessionID)
		ls.mu.Lock()
		ls.gets[session]++
		ls.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		if session != "" {
			<-r.Context().Done() // session streams stay open and empty
			return
		}
		for {
			select {
			case e, ok := <-ls.events:
				if !ok {
					return
				}
				if _, err := fmt.Fprintf(w, "data: %s\n\n", e); err != nil || rc.Flush() != nil {
					return
				}
			case <-r.Context().Done():
				return
			}
		}
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

func (ls *lyingServer) sessionGets() map[string]int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make(map[string]int)
	for s, n := range ls.gets {
		if s != "" {
			out[s] = n
		}
	}
	return out
}

// TestHTTPClientOpensStreamsOnlyForItsOwnCalls has a server send 1,500
// answers to no call of the client's, each naming a new session, and then
// the answer to the client's own session/new: the client delivers them
// all, and opens the stream of its own session alone.
func TestHTTPClientOpensStreamsOnlyForItsOwnCalls(t *testing.T) {
	ls := startLyingServer(t)
	client := dial(t, ls.URL, nil)
	send(t, client, initRequest)
	assert.Equal(t, initAnswer, recvMsg(t, client))

	send(t, client, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	<-ls.posted
	const lies = 1500
	for i := range lies {
		ls.events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":"lie-%d","result":{"sessionId":"s%d"}}`, i, i)
	}
	own := `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"mine"}}`
	ls.events <- own
	for i := range lies {
		require.Equal(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":"lie-%d","result":{"sessionId":"s%d"}}`, i, i), recvMsg(t, client))
	}
	require.Equal(t, own, recvMsg(t, client))
	// A message for the session, posted after its answer: its stream is
	// open by then, and the only session stream there is.
	send(t, client, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"mine"}}`)
	<-ls.posted
	gets := ls.sessionGets()
	assert.Len(t, gets, 1, "session streams opened besides the client's own")
	assert.Equal(t, 1, gets["mine"])
}

// TestHTTPClientSessionStreamsAreBounded has the server answer the
// client's own calls with a new session each, past DialOptions.MaxSessions:
// the transport fails instead of opening one stream more.
func TestHTTPClientSessionStreamsAreBounded(t *testing.T) {
	ls := startLyingServer(t)
	client := dial(t, ls.URL, &DialOptions{MaxSessions: 2})
	send(t, client, initRequest)
	assert.Equal(t, initAnswer, recvMsg(t, client))
	for i := range 3 {
		send(t, client, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{}}`, i+1))
		<-ls.posted
		ls.events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"sessionId":"s%d"}}`, i+1, i)
	}
	for range 3 {
		if _, err := recv(t, client); err != nil {
			assert.ErrorContains(t, err, "more than 2 session streams")
			break
		}
	}
	_, err := recv(t, client)
	assert.ErrorContains(t, err, "more than 2 session streams")
	assert.LessOrEqual(t, len(ls.sessionGets()), 2)
}
