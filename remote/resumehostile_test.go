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
