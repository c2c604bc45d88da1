package remote

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

func TestWebSocketCarriesMessagesBothWaysInOrder(t *testing.T) {
	ts := startServer(t, nil)
	client := dial(t, ts.url("ws"), nil)
	send(t, client, initRequest)
	server := ts.next(t)
	assert.Equal(t, initRequest, recvMsg(t, server))

	for i := range 100 {
		send(t, server, `{"jsonrpc":"2.0","method":"n","params":{"i":`+strconv.Itoa(i)+`}}`)
	}
	for i := range 100 {
		assert.Equal(t, `{"jsonrpc":"2.0","method":"n","params":{"i":`+strconv.Itoa(i)+`}}`, recvMsg(t, client))
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("a", 1<<20) + `"}`
	send(t, client, big)
	assert.Equal(t, big, recvMsg(t, server), "a message far above coder/websocket's own 32 KiB default")
}

func TestWebSocketUpgradeAnswerCarriesConnectionID(t *testing.T) {
	ts := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, ts.url("ws"), nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	assert.Len(t, resp.Header.Get(HeaderConnectionID), 36)
	_ = ts.next(t)
}

func TestWebSocketIgnoresBinaryFrames(t *testing.T) {
	ts := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, ts.url("ws"), nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	server := ts.next(t)

	require.NoError(t, ws.Write(ctx, websocket.MessageBinary, []byte(initRequest)))
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(initRequest)))
	require.NoError(t, ws.Write(ctx, websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","method":"binary"}`)))
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"text"}`)))
	assert.Equal(t, initRequest, recvMsg(t, server))
	assert.Equal(t, `{"jsonrpc":"2.0","method":"text"}`, recvMsg(t, server))
}

func TestWebSocketFirstMessageMustBeInitialize(t *testing.T) {
	ts := startServer(t, nil)
	client := dial(t, ts.url("ws"), nil)
	server := ts.next(t)

	send(t, client, `{"jsonrpc":"2.0","id":7,"result":{}}`) // an answer before initialize is dropped
	send(t, client, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
	_, err := recv(t, server)
	require.ErrorContains(t, err, "first message was not initialize")
	_, err = recv(t, client)
	require.Error(t, err)
	assert.Equal(t, websocket.StatusProtocolError, websocket.CloseStatus(err), "closed with 1002 and a reason")
}

func TestWebSocketDropsOverLongMessageAndReadsOn(t *testing.T) {
	ts := startServer(t, nil)
	client := dial(t, ts.url("ws"), nil)
	send(t, client, initRequest)
	server := ts.next(t)
	assert.Equal(t, initRequest, recvMsg(t, server))
	server.(interface{ SetReadLimit(int) }).SetReadLimit(1000)

	long := `{"jsonrpc":"2.0","id":"big","method":"x","params":"` + strings.Repeat("a", 100_000) + `"}`
	send(t, client, long)
	send(t, client, `{"jsonrpc":"2.0","id":2,"method":"after"}`)
	_, err := recv(t, server)
	var tooLarge *acprpc.MessageTooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, len(long), tooLarge.Size)
	assert.Equal(t, 1000, tooLarge.Limit)
	assert.Equal(t, long[:4<<10], string(tooLarge.Prefix), "the first bytes are kept to find the ID")
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"method":"after"}`, recvMsg(t, server), "the connection goes on")
}

func TestWebSocketCloseEndsThePeersRecv(t *testing.T) {
	for _, closer := range []string{"client", "server"} {
		t.Run(closer+" closes", func(t *testing.T) {
			ts := startServer(t, nil)
			client := dial(t, ts.url("ws"), nil)
			send(t, client, initRequest)
			server := ts.next(t)
			assert.Equal(t, initRequest, recvMsg(t, server))
			closing, other := client, server
			if closer == "server" {
				closing, other = server, client
			}
			// Both sides read, as a Conn always does: the close handshake
			// completes and the peer sees a normal end of input.
			closingRead := make(chan error, 1)
			go func() { _, err := closing.Recv(); closingRead <- err }()
			otherRead := make(chan error, 1)
			go func() { _, err := other.Recv(); otherRead <- err }()

			require.NoError(t, closing.Close())
			assert.ErrorIs(t, <-otherRead, io.EOF, "a normal close is the end of input")
			assert.Error(t, <-closingRead)
			assert.Error(t, other.Send([]byte(`{}`)))
			require.NoError(t, closing.Close(), "closing twice is safe")
		})
	}
}

func TestWebSocketCloseWithoutAReadIsImmediate(t *testing.T) {
	ts := startServer(t, nil)
	client := dial(t, ts.url("ws"), nil)
	send(t, client, initRequest)
	server := ts.next(t)
	assert.Equal(t, initRequest, recvMsg(t, server))
	require.NoError(t, client.Close()) // nobody reads on either side: no handshake to wait for
	_, err := recv(t, server)
	require.Error(t, err)
}

func TestWebSocketCloseReturnsWhenThePeerIgnoresTheHandshake(t *testing.T) {
	ts := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, ts.url("ws"), nil) // never reads: no close frame comes back
	require.NoError(t, err)
	defer ws.CloseNow()
	server := ts.next(t)
	got := make(chan error, 1)
	go func() { _, err := server.Recv(); got <- err }()
	require.NoError(t, server.Close())
	require.Error(t, <-got)
}

func TestWebSocketSilentPeerIsDisconnected(t *testing.T) {
	ts := startServer(t, &Options{IdleTimeout: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, ts.url("ws"), nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(initRequest)))
	server := ts.next(t)
	assert.Equal(t, initRequest, recvMsg(t, server))

	// The client never reads again, so it never answers a ping.
	_, err = recv(t, server)
	require.ErrorContains(t, err, "the peer sent nothing for 100ms")
	require.NoError(t, server.Close())
}

// TestWebSocketPeerAnsweringPingsStaysConnected has a peer that sends
// nothing but answers every ping: the server pings every quarter of
// IdleTimeout and keeps the connection over two idle timeouts. The timeout
// is a second, so that a pong a loaded machine delays by a few hundred
// milliseconds still comes in time; the test runs beside the others.
func TestWebSocketPeerAnsweringPingsStaysConnected(t *testing.T) {
	t.Parallel()
	ts := startServer(t, &Options{IdleTimeout: time.Second})
	pings := make(chan struct{}, 100)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, ts.url("ws"), &websocket.DialOptions{
		OnPingReceived: func(context.Context, []byte) bool { pings <- struct{}{}; return true },
	})
	require.NoError(t, err)
	defer ws.CloseNow()
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(initRequest)))
	server := ts.next(t)
	assert.Equal(t, initRequest, recvMsg(t, server))

	reads := make(chan string)
	go func() {
		defer close(reads)
		for {
			_, m, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			reads <- string(m)
		}
	}()
	serverRecv := make(chan error, 1)
	go func() { _, err := server.Recv(); serverRecv <- err }()
	for range 8 { // two idle timeouts' worth of pings, each answered
		select {
		case <-pings:
		case err := <-serverRecv:
			t.Fatalf("the server gave up on a peer that answers its pings: %v", err)
		case <-ctx.Done():
			t.Fatal("the server stopped pinging")
		}
	}
	select {
	case err := <-serverRecv:
		t.Fatalf("the server gave up on a peer that answers its pings: %v", err)
	default:
	}
	send(t, server, `{"jsonrpc":"2.0","method":"still/here"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","method":"still/here"}`, <-reads)
	require.NoError(t, server.Close())
	<-serverRecv
	for range reads {
	}
}

func TestWebSocketPeerThatStopsReadingIsDisconnected(t *testing.T) {
	ts := startServer(t, &Options{WriteTimeout: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, ts.url("ws"), nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(initRequest)))
	server := ts.next(t)
	assert.Equal(t, initRequest, recvMsg(t, server))

	chunk := []byte(`{"jsonrpc":"2.0","method":"n","params":"` + strings.Repeat("a", 1<<20) + `"}`)
	var sendErr error
	for i := 0; i < 1000 && sendErr == nil; i++ { // the socket buffers fill, then a write stalls
		sendErr = server.Send(chunk)
	}
	require.ErrorContains(t, sendErr, "the peer read nothing for 100ms")
	require.NoError(t, server.Close())
}

func TestDialRefusesUnknownSchemes(t *testing.T) {
	_, err := Dial(context.Background(), "ftp://localhost/acp", nil)
	require.ErrorContains(t, err, `unsupported URL scheme "ftp"`)
}

func TestWebSocketDialReportsRefusal(t *testing.T) {
	ts := startServer(t, &Options{Authenticate: BearerToken("secret")})
	_, err := Dial(context.Background(), ts.url("ws"), nil)
	require.ErrorContains(t, err, "401 Unauthorized")
	ts.noneAccepted(t)
}
