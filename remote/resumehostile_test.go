package remote

import (
	"fmt"
	"net/http"
	"testing"

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
