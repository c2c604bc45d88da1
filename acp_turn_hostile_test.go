package acprpc_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// An agent that never answers a cancelled prompt, and a client that
// prompts again and again on that session, each prompt cancelled in turn:
// each cancelled turn holds the session's next prompts only until
// TurnCancelWait has passed since its cancel, and is warned about once. A
// turn whose call has already waited that long holds nothing more, so the
// agent cannot make every later prompt wait TurnCancelWait again; it used
// to hold each next prompt TurnCancelWait anew, for ever.
func TestPromptNeverAnsweredCancelledTurnHoldsOnlyOnce(t *testing.T) {
	ctx := wiretest.Context(t)
	records := &wiretest.Recorder{}
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{Logger: records.Logger(), TurnCancelWait: 20 * time.Millisecond})
	const prompts = 5
	for range prompts {
		callCtx, cancel := context.WithCancel(ctx)
		done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
		p.ExpectRequest(ctx, "session/prompt")
		cancel()
		p.ExpectNotification(ctx, "session/cancel")
		assert.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrCancelled) // its own wait ran out
	}
	var held, warned int
	for _, r := range records.Logged() {
		switch {
		case strings.Contains(r.Message, "holding a prompt"):
			held++
		case strings.Contains(r.Message, "has not answered a prompt whose turn was cancelled"):
			warned++
		}
	}
	assert.Zero(t, held, "a prompt held for turns whose wait had run out")
	assert.Equal(t, prompts-1, warned, "one warning per unanswered turn a prompt went out after")
}

// Shutdown while a prompt is held behind its session's cancelled turn ends
// the held call without sending it: a prompt sent then would only be
// cancelled at once. It used to go out once the hold ran out.
func TestShutdownEndsAHeldPromptUnsent(t *testing.T) {
	ctx := wiretest.Context(t)
	held := logSignal{msg: "acprpc: holding a prompt", seen: make(chan struct{})}
	c, p := wiretest.Connect(t, wiretest.Transports[0], pinged(), &acprpc.Options{Logger: slog.New(&held), TurnCancelWait: time.Minute})
	callCtx, cancel := context.WithCancel(ctx)
	done := goCall(c, callCtx, "session/prompt", map[string]any{"sessionId": "s"}, nil, acprpc.WaitAfterCancel(time.Millisecond))
	p.ExpectRequest(ctx, "session/prompt") // never answered
	cancel()
	p.ExpectNotification(ctx, "session/cancel")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, done), acprpc.ErrCancelled)

	done = goCall(c, ctx, "session/prompt", map[string]any{"sessionId": "s"}, nil)
	wiretest.Recv(t, ctx, (<-chan struct{})(held.seen))
	shut := make(chan error, 1)
	go func() { shut <- c.Shutdown(ctx) }()
	err := wiretest.Recv(t, ctx, done)
	require.ErrorIs(t, err, acprpc.ErrShutdown)
	var callErr *acprpc.CallError
	require.ErrorAs(t, err, &callErr)
	assert.True(t, callErr.ID.IsZero(), "not sent, so no ID: %v", err)
	require.NoError(t, wiretest.Recv(t, ctx, shut))
	for _, m := range p.Rest(ctx) {
		assert.NotEqual(t, "session/prompt", m.Method, "the held prompt was sent: %s", m.Raw)
	}
}
