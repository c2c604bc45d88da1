package remote

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/wiretest"
)

// numbered is the nth message of a test's server, as a notification.
func numbered(n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":{"n":%d}}`, n)
}

// A GET whose Last-Event-ID the server cannot resume from (not a number,
// negative, beyond 64 bits, an event that was never sent) is refused with
// 400 and leaves the GET that holds the stream alone: a request that is
// refused changes nothing, and the client's stream goes on.
func TestHTTPResumeWithABadLastEventIDLeavesTheReader(t *testing.T) {
	c, id, server, events := openConnectionStream(t, nil)
	ctx := wiretest.Context(t)
	send(t, server, numbered(1))
	require.Equal(t, "1 "+numbered(1), wiretest.Recv(t, ctx, events))
	for n, bad := range []string{"abc", "-1", "+1", "1.0", "0x1", "18446744073709551616", "18446744073709551615", "99"} {
		resp, body := c.do(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Last-Event-ID", bad)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "Last-Event-ID %q: %s", bad, body)
		send(t, server, numbered(n+2))
		assert.Equal(t, fmt.Sprintf("%d %s", n+2, numbered(n+2)), wiretest.Recv(t, ctx, events),
			"the stream after a refused Last-Event-ID %q", bad)
	}
	require.NoError(t, server.Close())
	for range events {
	}
}

// A GET that resumes the connection's stream after the connection closed
// (Shutdown's cancelled answer still queued, the client's stream cut just
// before) gets the events written into the cut stream after its
// Last-Event-ID, then what was queued, each with its ID: it used to get
// only what was queued, with a gap in the IDs the client could not see.
func TestHTTPResumeAfterTheCloseGetsWhatTheCutStreamLost(t *testing.T) {
	ts := startServer(t, nil)
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)
	get := c.open(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream")
	require.Equal(t, http.StatusOK, get.StatusCode)
	events := sseEventIDs(get)
	ctx := wiretest.Context(t)
	for n := 1; n <= 3; n++ {
		send(t, server, numbered(n))
		require.Equal(t, fmt.Sprintf("%d %s", n, numbered(n)), wiretest.Recv(t, ctx, events))
	}
	h := ts.Server.lookup(id, true)
	h.mu.Lock()
	released := h.streams[""].released
	h.mu.Unlock()
	require.NoError(t, get.Body.Close()) // the cut: the client read event 1 only
	wiretest.Recv(t, ctx, released)
	send(t, server, numbered(4))
	require.NoError(t, server.Close())

	resp := c.open(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Last-Event-ID", "1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got []string
	for ev := range sseEventIDs(resp) {
		got = append(got, ev)
	}
	want := []string{"2 " + numbered(2), "3 " + numbered(3), "4 " + numbered(4)}
	assert.Equal(t, want, got)
}

// held is what h holds for its client: the messages queued on its streams
// and the events its connection's stream keeps for a GET that resumes it.
func held(h *httpConn) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.queued + h.streams[""].resume.bytes
}

// A client whose stream is cut again and again while the agent floods it,
// each time before it read the last quarter of what the server wrote (more
// than the server keeps for resuming before it), loses nothing,
// reads nothing twice, and makes the server hold at most MaxQueuedBytes
// and the quarter of it kept for resuming, with one message more: the
// events a resume puts back are queued beyond MaxQueuedBytes, and Send
// waits until the queue is below it again. The GETs are driven through the
// methods serveGet calls, without sockets, whose buffers would decide how
// much a cut loses.
func TestHTTPStreamCutAgainAndAgainHoldsBoundedMemory(t *testing.T) {
	const limit, n = 64 << 10, 6000
	ts := startServer(t, &Options{MaxQueuedBytes: limit})
	c := newRawHTTP(t, ts.url("http"))
	_, server := c.initialize(ts)
	h := server.(*httpConn)
	msg := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":{"n":%d,"pad":%q}}`, i, strings.Repeat("x", 100))
	}
	sent := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := server.Send([]byte(msg(i))); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	ctx := wiretest.Context(t)
	last, most, cuts := 0, 0, 0
	for last < n {
		lastEventID := ""
		if last > 0 {
			lastEventID = strconv.Itoa(last)
		}
		st, err := h.attach(ctx, "", lastEventID, func(time.Time) {})
		require.NoError(t, err)
		var msgs [][]byte
		for taken := 0; taken < limit/2 && last+len(msgs) < n; {
			batch, first := h.head(st)
			if batch == nil { // the flood has not caught up
				wiretest.Recv(t, ctx, st.wake)
				continue
			}
			require.Equal(t, uint64(last+len(msgs)+1), first, "the event after the one the client read last")
			h.taken(st, len(batch)) // written
			msgs = append(msgs, batch...)
			for _, m := range batch {
				taken += len(m)
			}
		}
		read := len(msgs) - len(msgs)/4 // the client read all but the last quarter before the cut
		for _, m := range msgs[:read] {
			require.Equal(t, msg(last+1), string(m))
			last++
		}
		most = max(most, held(h))
		require.LessOrEqual(t, most, limit+limit/4+len(msg(n)), "what the server holds for the client")
		h.detach("", st)
		cuts++
	}
	require.NoError(t, <-sent)
	t.Logf("%d cuts, held at most %d bytes (MaxQueuedBytes %d)", cuts, most, limit)
	require.NoError(t, server.Close())
}
