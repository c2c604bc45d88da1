package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// The messages an agent sends before an answer are handled before the
// client's Call returns, over both remote transports, as over stdio. Over
// Streamable HTTP they may belong to other streams than the answer (a
// session's, the connection's), which nothing orders with one another: each
// case is one such pair, run many times, since a race between two streams
// is lost only in some runs.

// replayed is how many updates session/load replays before its answer.
const replayed = 50

// orderBudget bounds the time each case spends on one transport: it stops
// repeating after that (once it has run minOrderRounds times), so a busy
// machine makes the test run fewer rounds, not take longer.
const (
	orderBudget    = 5 * time.Second
	minOrderRounds = 5
)

// rounds runs round up to n times, within orderBudget.
func rounds(n int, round func(i int)) {
	deadline := time.Now().Add(orderBudget)
	for i := 0; i < n && (i < minOrderRounds || time.Now().Before(deadline)); i++ {
		round(i)
	}
}

// orderedAgent is an agent whose answers follow messages of other streams:
// session/load replays its session's history first, session/new sends an
// update of the new session, session/prompt a notification of no session.
func orderedAgent() wiretest.Mux {
	var sessions atomic.Int64
	notify := func(ctx context.Context, method string, params any) error {
		return acprpc.ConnFromContext(ctx).Notify(ctx, method, params)
	}
	update := func(sid string, n int) map[string]any {
		return map[string]any{"sessionId": sid, "update": map[string]any{"sessionUpdate": "agent_message_chunk", "n": n}}
	}
	return wiretest.Mux{
		"initialize": initialized,
		"session/load": func(ctx context.Context, req *acprpc.Request) (any, error) {
			for n := range replayed {
				if err := notify(ctx, "session/update", update(req.SessionID, n)); err != nil {
					return nil, err
				}
			}
			return json.RawMessage(`{}`), nil
		},
		"session/new": func(ctx context.Context, _ *acprpc.Request) (any, error) {
			sid := fmt.Sprintf("new-%d", sessions.Add(1))
			if err := notify(ctx, "session/update", update(sid, 0)); err != nil {
				return nil, err
			}
			return map[string]string{"sessionId": sid}, nil
		},
		"session/prompt": func(ctx context.Context, _ *acprpc.Request) (any, error) {
			if err := notify(ctx, "_test/note", map[string]string{}); err != nil {
				return nil, err
			}
			return map[string]string{"stopReason": "end_turn"}, nil
		},
	}
}

// handledCounts counts the notifications a client handled, by method and
// session.
type handledCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *handledCounts) Handle(_ context.Context, req *acprpc.Request) (any, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = make(map[string]int)
	}
	h.n[req.Method+" "+req.SessionID]++
	return nil, nil
}

func (h *handledCounts) of(method, session string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[method+" "+session]
}

// orderCase is one pair of a message and the answer it precedes, on other
// streams, played in rounds by a client Conn that counts what it handled.
type orderCase struct {
	name   string
	rounds func(t *testing.T, client *acprpc.Conn, counts *handledCounts)
}

var orderCases = []orderCase{
	{"load replay", loadReplayRounds},
	{"new session's update", newSessionRounds},
	{"notification without session", promptNoteRounds},
}

// loadReplayRounds: a session/load's replay is handled whole when the load
// returns.
func loadReplayRounds(t *testing.T, client *acprpc.Conn, counts *handledCounts) {
	ctx := wiretest.Context(t)
	rounds(20, func(i int) {
		sid := fmt.Sprintf("old-%d", i)
		require.NoError(t, client.Call(ctx, "session/load", map[string]any{"sessionId": sid, "cwd": "/", "mcpServers": []any{}}, nil))
		require.Equal(t, replayed, counts.of("session/update", sid), "load %d returned before its replay was handled", i)
	})
}

// newSessionRounds: an update of a new session sent before session/new's
// answer is handled when session/new returns, although the client learns
// the session only from that answer.
func newSessionRounds(t *testing.T, client *acprpc.Conn, counts *handledCounts) {
	ctx := wiretest.Context(t)
	rounds(20, func(i int) {
		var res struct{ SessionID string }
		require.NoError(t, client.Call(ctx, "session/new", map[string]any{"cwd": "/", "mcpServers": []any{}}, &res))
		require.Equal(t, 1, counts.of("session/update", res.SessionID), "session/new %d returned before its update was handled", i)
	})
}

// promptNoteRounds: a notification of no session sent before a prompt's
// answer is handled when the prompt returns.
func promptNoteRounds(t *testing.T, client *acprpc.Conn, counts *handledCounts) {
	ctx := wiretest.Context(t)
	var res struct{ SessionID string }
	require.NoError(t, client.Call(ctx, "session/new", map[string]any{"cwd": "/", "mcpServers": []any{}}, &res))
	rounds(100, func(i int) {
		require.NoError(t, client.Call(ctx, "session/prompt", map[string]any{"sessionId": res.SessionID, "prompt": []any{}}, nil))
		require.Equal(t, i+1, counts.of("_test/note", ""), "prompt %d returned before the notification sent ahead of its answer was handled", i)
	})
}

// runOrderCase plays c over each remote transport.
func runOrderCase(t *testing.T, c orderCase) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			as := startAgent(t, orderedAgent(), nil, nil)
			counts := &handledCounts{}
			client, _ := connectClient(t, as, kind, counts)
			c.rounds(t, client, counts)
		})
	}
}

func TestLoadReplayIsHandledBeforeTheLoadReturns(t *testing.T) { runOrderCase(t, orderCases[0]) }

func TestNewSessionsUpdateIsHandledBeforeItsAnswer(t *testing.T) { runOrderCase(t, orderCases[1]) }

func TestNotificationWithoutSessionIsHandledBeforeThePromptReturns(t *testing.T) {
	runOrderCase(t, orderCases[2])
}
