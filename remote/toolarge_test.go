package remote

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// An answer over the limit whose id comes after its big result still names
// its call, over WebSocket: JSON does not order members.
func TestWebSocketTooLargeFindsTheIDAfterTheResult(t *testing.T) {
	ts := startServer(t, nil)
	client := dial(t, ts.url("ws"), nil)
	send(t, client, initRequest)
	server := ts.next(t)
	assert.Equal(t, initRequest, recvMsg(t, server))
	server.(interface{ SetReadLimit(int) }).SetReadLimit(1000)

	long := `{"jsonrpc":"2.0","result":{"text":"` + strings.Repeat("a", 100_000) + `"},"id":7}`
	send(t, client, long)
	_, err := recv(t, server)
	var tooLarge *acprpc.MessageTooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, len(long), tooLarge.Size)
	assert.Equal(t, "7", tooLarge.ID.String())
	assert.True(t, tooLarge.IsResponse)
}

// The same over an SSE stream, with the event's data longer than the
// reader's buffer, and the stream reading on after it.
func TestSSETooLargeFindsTheIDAfterTheResult(t *testing.T) {
	long := `{"jsonrpc":"2.0","result":{"text":"` + strings.Repeat("a", 200_000) + `"},"id":"late"}`
	stream := "data: " + long + "\n\n:\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"after\"}\r\n\r\n"
	r := newSSEReader(strings.NewReader(stream), 1000)

	_, err := r.next()
	var tooLarge *acprpc.MessageTooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, len(long), tooLarge.Size)
	assert.Equal(t, `"late"`, tooLarge.ID.String())
	assert.True(t, tooLarge.IsResponse)
	assert.Equal(t, long[:4<<10], string(tooLarge.Prefix))

	msg, err := r.next()
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","method":"after"}`, string(msg), "the keep-alive is skipped and the stream reads on")
}

// An event's data lines are joined by "\n", and a stream that ends inside
// an event does not deliver it.
func TestSSEJoinsDataLinesAndDropsACutEvent(t *testing.T) {
	r := newSSEReader(strings.NewReader("data: {\"a\":\ndata: 1}\n\ndata: {\"cut\""), 1000)
	msg, err := r.next()
	require.NoError(t, err)
	assert.Equal(t, "{\"a\":\n1}", string(msg))
	_, err = r.next()
	assert.Error(t, err)
}
