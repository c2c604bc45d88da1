package remote

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// TestHTTPRouteOfAnIDTheConnCannotCarry: requests whose ID the Conn cannot
// carry (a fraction, true, an object, an array) are answered with
// "id": null, which names no route; the Server keeps none for them. It used
// to keep one per request under the raw ID, never removed: 200 such POSTs,
// most with 64 KiB IDs, held 11 MiB (400 held 22 MiB).
func TestHTTPRouteOfAnIDTheConnCannotCarry(t *testing.T) {
	const posts = 200
	srv := NewServer(Handle(wiretest.Mux{"initialize": initialized}, nil), nil)
	c := newRawHTTP(t, "http"+serveOnLoopback(t, srv))
	resp, body := c.do(http.MethodPost, initRequest)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	conn := resp.Header.Get(HeaderConnectionID)

	pad := strings.Repeat("1", 64<<10)
	ids := []string{`%d.%s`, `{"n":%d,"pad":"%s"}`, `[%d,"%s"]`, `true`}
	before := heapInUse()
	for i := range posts {
		id := ids[i%len(ids)]
		if id != "true" {
			id = fmt.Sprintf(id, i, pad) // each one its own
		}
		resp, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":`+id+`,"method":"x/any"}`, HeaderConnectionID, conn)
		require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	}
	events := sseEvents(c.open(http.MethodGet, "", HeaderConnectionID, conn, "Accept", "text/event-stream"))
	for range posts {
		var answer struct {
			ID    json.RawMessage
			Error acprpc.Error
		}
		require.NoError(t, json.Unmarshal([]byte(nextEvent(t, events)), &answer))
		assert.Equal(t, "null", string(answer.ID))
		assert.EqualValues(t, acprpc.CodeInvalidRequest, answer.Error.Code)
	}
	grown := int64(heapInUse()) - int64(before)
	t.Logf("%d POSTs whose IDs the Conn cannot carry: the heap grew by %d KiB", posts, grown>>10)
	assert.Less(t, grown, int64(4<<20), "routes are kept for answers that never name them")
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// nextEvent returns the next event of an SSE stream that is not a
// keep-alive.
func nextEvent(t *testing.T, events <-chan string) string {
	t.Helper()
	ctx := wiretest.Context(t)
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "the stream ended")
			if ev != "" {
				return ev
			}
		case <-ctx.Done():
			t.Fatal("no event on the stream")
		}
	}
}

// The client side of the same rule: a server's request whose ID the
// client's Conn answers with "id": null leaves no route behind, while one
// with an ID it carries keeps its route until its answer goes back.
func TestHTTPClientRouteOfAnIDTheConnCannotCarry(t *testing.T) {
	ts := startServer(t, nil)
	client, server := openHTTPPair(t, ts, perSessionStreams(t))
	deliver(t, client, server, `{"jsonrpc":"2.0","method":"open","params":{"sessionId":"s"}}`) // opens the session's stream
	for _, id := range []string{"1.5", "true", `{"a":1}`, `[1]`, "null"} {
		msg := `{"jsonrpc":"2.0","id":` + id + `,"method":"x/any","params":{"sessionId":"s"}}`
		send(t, server, msg)
		require.Equal(t, msg, recvMsg(t, client))
	}
	routes := func() int {
		h := client.(*httpClient)
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.answerTo)
	}
	assert.Zero(t, routes(), "routes kept for requests answered with a null ID")

	send(t, server, `{"jsonrpc":"2.0","id":1e0,"method":"x/any","params":{"sessionId":"s"}}`)
	recvMsg(t, client)
	assert.Equal(t, 1, routes())
	deliver(t, client, server, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	assert.Zero(t, routes(), "the answer, its ID spelled otherwise, takes its route")
}

// TestHTTPStreamWritesWhatIsQueuedTogether: a stream takes the messages
// queued when it wakes as one batch, in order, up to batchMessages and to
// batchBytes, but always the oldest, however large; they leave the queue
// once written, and room is made for Send.
func TestHTTPStreamWritesWhatIsQueuedTogether(t *testing.T) {
	h := newHTTPConn(NewServer(nil, nil))
	defer h.Close()
	st := h.streams[""]
	small := []byte(`{"n":1}`)
	large := make([]byte, batchBytes+1)
	h.mu.Lock()
	st.queue = []pending{{msg: large}, {msg: small}, {msg: small}}
	for range batchMessages + 1 {
		st.queue = append(st.queue, pending{msg: small})
	}
	h.queued = len(large) + (batchMessages+3)*len(small)
	h.mu.Unlock()

	batch, first := h.head(st)
	require.Len(t, batch, 1, "the oldest, too large for a batch with others, goes alone")
	assert.Len(t, batch[0], len(large))
	assert.Equal(t, uint64(1), first, "the connection's stream numbers its events from 1")
	room := h.room
	h.taken(st, len(batch))
	select {
	case <-room:
	default:
		t.Fatal("taking made no room")
	}

	batch, first = h.head(st)
	assert.Len(t, batch, batchMessages, "at most batchMessages at once")
	assert.Equal(t, uint64(2), first)
	h.taken(st, len(batch))
	batch, first = h.head(st)
	assert.Len(t, batch, 3)
	assert.Equal(t, uint64(2+batchMessages), first)
	h.taken(st, len(batch))
	batch, _ = h.head(st)
	assert.Nil(t, batch)
	assert.Zero(t, h.queued)
	assert.Nil(t, st.queue, "the queue's array is let go")
}
