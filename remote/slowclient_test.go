package remote

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Clients that read or write slowly, or not at all: each holds what the
// Server bounds, for as long as it bounds it, and then lets it go.

// rawConn opens a TCP connection to the server, closed with the test, that
// the test drives byte by byte.
func rawConn(t *testing.T, ts *testServer) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(wait)))
	return conn
}

// openStreamRaw sends the GET of connection id's SSE stream on a raw
// connection, and never reads its answer.
func openStreamRaw(t *testing.T, ts *testServer, id string) net.Conn {
	t.Helper()
	conn := rawConn(t, ts)
	_, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n%s: %s\r\n\r\n",
		DefaultPath, HeaderConnectionID, id)
	require.NoError(t, err)
	return conn
}

// smallBuffers is a loopback listener whose connections have small send
// buffers, so that a client that reads nothing stalls the server's writes
// after a few KiB instead of the megabytes the kernel would hold.
type smallBuffers struct{ net.Listener }

func listenSmall(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return smallBuffers{l}
}

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		_ = c.(*net.TCPConn).SetWriteBuffer(16 << 10)
	}
	return c, err
}

// awaitHangUp reads conn until the server closes it, and fails the test
// if it does not within the test's wait.
func awaitHangUp(t *testing.T, conn net.Conn, why string) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
	_, err := io.Copy(io.Discard, conn)
	require.NoError(t, err, why)
}

// TestHTTPStreamNotReadIsEndedAndReleased has a client open its
// connection's SSE stream and read nothing, while the agent writes until
// WriteTimeout closes the connection. The stream's own writes have that
// deadline too, so the stream ends with it: its goroutine, its queue and
// its TCP connection go, and until then it counts against MaxConnections.
// Repeated with room for one connection, each round finds the room again,
// and the heap after the rounds is back where it was.
func TestHTTPStreamNotReadIsEndedAndReleased(t *testing.T) {
	const rounds, queued = 4, 1 << 20
	ts := startServerOn(t, &Options{MaxConnections: 1, MaxQueuedBytes: queued, WriteTimeout: 200 * time.Millisecond}, listenSmall(t))
	msg := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"pad":"` + strings.Repeat("a", 64<<10) + `"}}`)
	before := measure()
	for range rounds {
		c := newRawHTTP(t, ts.url("http"))
		id, server := c.initialize(ts)
		conn := openStreamRaw(t, ts, id)
		var err error
		for err == nil {
			err = server.Send(msg)
		}
		require.ErrorContains(t, err, "the client read nothing")
		awaitHangUp(t, conn, "the server closed the stream's connection")
		c.client.CloseIdleConnections()
	}
	after := measure()
	grown := int64(after.heapBytes) - int64(before.heapBytes)
	t.Logf("heap %+.1f MiB, goroutines %+d after %d streams of %d MiB queued and never read",
		float64(grown)/(1<<20), after.goroutines-before.goroutines, rounds, queued>>20)
	assert.Less(t, grown, int64(2*queued), "the heap holds the queues of the streams that ended (without the fix: all %d)", rounds)
}
