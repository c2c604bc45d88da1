package acprpc_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// A peer that answers a notification (codex-acp answers $/cancel_request
// with an ID-less -32601) is logged as doing so, naming the last
// notification sent, once per connection and method; one before any
// notification names none; an ID-less -32700 or -32600 still says the peer
// could not read a message.
func TestPeerAnsweringNotificationIsLoggedOnce(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"ping": wiretest.Ping}, &acprpc.Options{Logger: log.Logger()})
	const methodNotFound = `{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}`
	pings := 0
	read := func() { // a ping answered: the Conn has read every line sent before it
		pings++
		id := strconv.Itoa(pings)
		p.Request(id, "ping", "")
		p.ExpectResult(ctx, id, `"pong"`)
	}
	p.Send(methodNotFound) // before any notification: no method to name
	p.Send(methodNotFound)
	read()
	for range 2 { // two cancelled calls, each $/cancel_request answered
		callCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Call(callCtx, "x/slow", nil, nil) }()
		p.ExpectRequest(ctx, "x/slow")
		cancel()
		require.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrCancelled)
		p.ExpectNotification(ctx, "$/cancel_request")
		p.Send(methodNotFound)
		read() // before the next notification is written
	}
	require.NoError(t, c.Notify(ctx, "x/note", nil))
	p.ExpectNotification(ctx, "x/note")
	p.Send(methodNotFound)
	p.RespondError(`null`, acprpc.CodeParseError, "Parse error")
	read() // so they are logged

	var lines []wiretest.Record
	for _, r := range log.Logged() {
		if r.Level >= slog.LevelWarn {
			lines = append(lines, r)
		}
	}
	require.Len(t, lines, 4, "%v", lines)
	assert.Equal(t, "acprpc: the peer sent an error answer that names no request, though no notification was sent to it; "+
		"the answer is ignored. Logged once per connection", lines[0].Message)
	lines = lines[1:]
	const answered = "acprpc: the peer answered a notification, which JSON-RPC forbids; the answer is ignored. " +
		"The answer names no method: the one logged is the last notification sent before it came, the likely one. " +
		"Logged once per connection and method"
	assert.Equal(t, answered, lines[0].Message)
	assert.Equal(t, map[string]string{"method": "$/cancel_request", "error": `{"code":-32601,"message":"Method not found"}`}, lines[0].Attrs)
	assert.Equal(t, answered, lines[1].Message)
	assert.Equal(t, "x/note", lines[1].Attrs["method"])
	assert.Equal(t, "acprpc: the peer answered a message it could not read", lines[2].Message)
}

// A peer flooding ID-less error answers of ever new codes and messages
// costs one warning per method this side notified, not one per answer: the
// methods remembered are this side's own, whatever the peer sends.
func TestPeerAnsweringNotificationsWithDistinctJunkIsLoggedOnce(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"ping": wiretest.Ping}, &acprpc.Options{Logger: log.Logger()})
	require.NoError(t, c.Notify(ctx, "x/note", nil))
	p.ExpectNotification(ctx, "x/note")
	for i := range 1000 {
		p.RespondError(`null`, int64(1000+i), fmt.Sprintf("junk %d", i))
	}
	p.Request("1", "ping", "")
	p.ExpectResult(ctx, "1", `"pong"`)
	var warned int
	for _, r := range log.Logged() {
		if r.Level >= slog.LevelWarn {
			warned++
		}
	}
	assert.Equal(t, 1, warned, "%.500v", log.Logged())
}

// The notification an ID-less answer is put down to is the last one
// written before the answer was read, even if the Received hook, which
// sees the answer first, lets the caller send another before it is logged
// (a client that goes on once its hook has seen the answer).
func TestPeerAnsweringNotificationNamesTheOneBeforeTheHook(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	seen, release := make(chan struct{}), make(chan struct{})
	hooks := acprpc.Hooks{Received: func(_ context.Context, m *acprpc.Message) {
		if m.Kind == acprpc.KindError && m.ID.IsZero() {
			close(seen)
			<-release
		}
	}}
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"ping": wiretest.Ping}, &acprpc.Options{Logger: log.Logger(), Hooks: hooks})
	require.NoError(t, c.Notify(ctx, "x/answered", nil))
	p.ExpectNotification(ctx, "x/answered")
	p.Send(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}`)
	wiretest.Recv(t, ctx, seen)
	require.NoError(t, c.Notify(ctx, "x/after", nil))
	p.ExpectNotification(ctx, "x/after") // written once the peer reads it
	close(release)
	p.Request("1", "ping", "")
	p.ExpectResult(ctx, "1", `"pong"`)

	answered, logged := log.FindLogged(slog.LevelWarn, "acprpc: the peer answered a notification")
	require.True(t, logged)
	assert.Equal(t, "x/answered", answered.Attrs["method"])
}
