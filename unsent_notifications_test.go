package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// streamUpdate is the session/update a streaming turn sends: its place in
// the turn, so the reader can tell a lost or reordered update.
type streamUpdate struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		SessionUpdate string `json:"sessionUpdate"`
		N             int    `json:"n"`
	} `json:"update"`
}

func newStreamUpdate(n int) streamUpdate {
	var u streamUpdate
	u.SessionID, u.Update.SessionUpdate, u.Update.N = "s", "agent_message_chunk", n
	return u
}

// streamingAgent answers a request by sending up to max updates, each
// Notify's error on notified, then end_turn; a Notify that fails ends the
// turn with its error. After each update it checks that the unsent
// notifications stayed within the bounds.
func streamingAgent(t *testing.T, max int, bound acprpc.Options, notified chan<- error) acprpc.HandlerFunc {
	return func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.IsNotification() { // session/cancel, after the Conn has acted on it
			return nil, nil
		}
		conn := acprpc.ConnFromContext(ctx)
		for n := range max {
			err := conn.Notify(ctx, "session/update", newStreamUpdate(n))
			if notified != nil {
				notified <- err
			}
			if err != nil {
				return nil, err
			}
			s := conn.Stats() // one sender: never a message over either bound
			assert.LessOrEqual(t, s.UnsentNotifications, bound.MaxUnsentNotifications, "after update %d", n)
			assert.LessOrEqual(t, s.UnsentNotificationBytes, bound.MaxUnsentNotificationBytes, "after update %d", n)
		}
		return map[string]string{"stopReason": "end_turn"}, nil
	}
}

// expectUpdates reads n session/updates, which must be numbered from 0 in
// order, and returns what the Conn wrote after them.
func expectUpdates(t *testing.T, ctx context.Context, p *wiretest.Peer, n int) wiretest.Msg {
	t.Helper()
	for want := 0; want < n; want++ {
		m := p.ExpectNotification(ctx, "session/update")
		var u streamUpdate
		require.NoError(t, json.Unmarshal(m.Params, &u))
		require.Equal(t, want, u.Update.N, "an update lost or out of order")
	}
	return p.Expect(ctx)
}

// A client that stops reading holds the agent's unsent notifications at
// the limit, in number or in bytes, whichever is reached first: Notify
// waits for room. A session/cancel then ends the waiting Notify at once,
// with ErrCancelled, and the turn with it; the updates queued before the
// cancel are still written, every one in order, before the answer.
// io.Pipe holds nothing, so what the reader has not read is the Conn's.
func TestNotifyWaitsForRoomAndCancelEndsTheTurn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		bound    acprpc.Options
		held     int  // the updates that fit
		defaults bool // the Conn has no Options: bound is the documented default
	}{
		{"messages", acprpc.Options{MaxUnsentNotifications: 8, MaxUnsentNotificationBytes: 1 << 20}, 8, false},
		// Each update is 125 bytes (its newline not counted): 5 fit in 700.
		{"bytes", acprpc.Options{MaxUnsentNotifications: 1000, MaxUnsentNotificationBytes: 700}, 5, false},
		// The defaults documented on Options: 16 updates, their 2,000 bytes
		// far from 64 KiB.
		{"default", acprpc.Options{MaxUnsentNotifications: 16, MaxUnsentNotificationBytes: 64 << 10}, 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wiretest.NoLeak(t)
			ctx := wiretest.Context(t)
			notified := make(chan error, 100)
			opts := &tc.bound
			if tc.defaults {
				opts = nil
			}
			c, p := wiretest.Connect(t, wiretest.Transports[2], streamingAgent(t, 100, tc.bound, notified), opts)
			p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
			for range tc.held {
				require.NoError(t, wiretest.Recv(t, ctx, notified))
			}
			// The reader reads nothing, so no room is made: nothing more is
			// let through, and what waits is the limit.
			assert.Empty(t, notified, "a notification went past the limit")
			s := c.Stats()
			assert.Equal(t, tc.held, s.UnsentNotifications)
			assert.LessOrEqual(t, s.UnsentNotificationBytes, tc.bound.MaxUnsentNotificationBytes)

			p.Notify("session/cancel", `{"sessionId":"s"}`)
			err := wiretest.Recv(t, ctx, notified)
			require.ErrorIs(t, err, acprpc.ErrCancelled, "the waiting Notify")
			require.ErrorIs(t, err, context.Canceled)
			answer := expectUpdates(t, ctx, p, tc.held)
			require.True(t, answer.IsAnswerTo("1"), "after the updates: %s", answer.Raw)
			assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(answer.Result))
		})
	}
}

// A reader slower than the agent loses nothing and sees every update in
// order, then the answer, over a pipe with a kernel buffer; the agent's
// unsent notifications stay within the bounds all the while (the agent
// checks after each update).
func TestNotifySlowReaderLosesNothing(t *testing.T) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	const updates = 3000
	bound := acprpc.Options{MaxUnsentNotifications: 4, MaxUnsentNotificationBytes: 300}
	opts := bound
	_, p := wiretest.Connect(t, wiretest.Transports[0], streamingAgent(t, updates, bound, nil), &opts)
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	answer := expectUpdates(t, ctx, p, updates)
	require.True(t, answer.IsAnswerTo("1"), "after the updates: %s", answer.Raw)
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(answer.Result))
}

// Stress: senders wait in Notify on a full queue that nobody reads while
// their contexts are cancelled at random and the connection closes under
// them. Every Notify returns, with nil (queued), ErrCancelled or
// ErrConnClosed, and the unsent notifications never exceed the limit by
// more than one message a sender.
func TestStressNotifyBlockedCancelClose(t *testing.T) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	const rounds, senders, limit = 30, 8, 4
	for round := range rounds {
		c, p := wiretest.Connect(t, wiretest.Transports[2], nil, &acprpc.Options{MaxUnsentNotifications: limit})
		var wg sync.WaitGroup
		cancels := make([]context.CancelFunc, senders)
		errs := make(chan error, senders*100)
		for i := range senders {
			sctx, cancel := context.WithCancel(ctx)
			cancels[i] = cancel
			wg.Go(func() {
				for n := 0; ; n++ {
					err := c.Notify(sctx, "x/note", map[string]int{"n": n})
					if err != nil {
						errs <- err
						return
					}
					assert.LessOrEqual(t, c.Stats().UnsentNotifications, limit+senders)
				}
			})
		}
		// Half the senders are cancelled, in an order that changes with the
		// round; the rest end with the connection.
		for i := range senders / 2 {
			cancels[(i*3+round)%senders]()
		}
		if round%2 == 1 {
			p.Expect(ctx) // some room made while they wait
		}
		require.NoError(t, c.Close())
		wg.Wait()
		close(errs)
		for err := range errs {
			if !assert.Truef(t, errors.Is(err, acprpc.ErrCancelled) || errors.Is(err, acprpc.ErrConnClosed), "round %d: %v", round, err) {
				break
			}
		}
		for _, cancel := range cancels {
			cancel()
		}
		assert.Zero(t, c.Stats().UnsentNotifications, fmt.Sprintf("round %d: the queue after the close", round))
	}
}
