package remote

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// The bound on an agent's unsent notifications holds end to end over the
// remote transports: a client that stops reading holds the agent to what
// the Conn's limit and the network's buffers (SendBuffer on the server's
// side, the client's own) hold, and a cancel still ends the turn at once.

// slowReaderDial is DialOptions whose connections have a small receive
// buffer, so what the client's kernel holds unread is a few KiB, not the
// megabytes its autotuning would grow to.
func slowReaderDial(t *testing.T) *DialOptions {
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
		}
		return c, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &DialOptions{HTTPClient: &http.Client{Transport: tr}}
}

// countedUpdate is a session/update numbered by its place in the turn.
type countedUpdate struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		SessionUpdate string `json:"sessionUpdate"`
		N             int    `json:"n"`
	} `json:"update"`
}

// A client that stops reading, over WebSocket and over Streamable HTTP,
// stops the agent's turn in Notify once its unsent notifications are at
// the limit (Stats), with no more let through than that limit and the
// network's bounded buffers hold; before, the transports took whatever
// the Conn wrote (the kernel's autotuned socket buffers, the SSE queue up
// to MaxQueuedBytes) and the turn ran on. A session/cancel then ends the
// turn while the client still reads nothing, and once it reads, every
// update comes, in order, then the cancelled answer.
func TestSlowClientHoldsTheAgentToTheNotificationLimit(t *testing.T) {
	const (
		limit      = acprpc.DefaultMaxUnsentNotifications
		sendBuffer = 16 << 10 // the server's socket send buffers (the kernel doubles it)
		// held bounds the bytes a turn may get past Notify while the
		// client reads nothing: the Conn's limit (its updates of about
		// 130 bytes each), twice the send buffer of the socket, and the
		// client's: its kernel's few KiB and its library's read buffers
		// (the SSE reader's 64 KiB).
		held = limit*130 + 2*sendBuffer + 128<<10
		// maxUpdates is more than held can hold: a turn that sends them
		// all was never held back.
		maxUpdates = held / 100
	)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := wiretest.Context(t)
			var accepted atomic.Int64 // the updates Notify took
			turnEnded := make(chan error, 1)
			prompt := func(ctx context.Context, req *acprpc.Request) (any, error) {
				conn := acprpc.ConnFromContext(ctx)
				var u countedUpdate
				u.SessionID, u.Update.SessionUpdate = req.SessionID, "agent_message_chunk"
				for n := range maxUpdates {
					u.Update.N = n
					if err := conn.Notify(ctx, "session/update", u); err != nil {
						turnEnded <- err
						return nil, err
					}
					accepted.Add(1)
				}
				turnEnded <- nil
				return map[string]string{"stopReason": "end_turn"}, nil
			}
			as := startAgent(t, wiretest.Mux{"initialize": initialized, "session/prompt": prompt}, nil,
				&Options{SendBuffer: sendBuffer, MaxQueuedBytes: 1 << 20})
			p := wiretest.PeerOf(t, dial(t, as.url(kind), slowReaderDial(t)))
			p.Request("0", "initialize", `{"protocolVersion":1}`)
			agent, _ := as.next(t)
			p.ExpectResult(ctx, "0", `{"protocolVersion":1}`)

			p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`) // and read nothing
			stuck := awaitStuck(t, agent, &accepted, turnEnded)
			assert.Equal(t, limit, agent.Stats().UnsentNotifications, "the queue of a turn held back")
			assert.Less(t, stuck*100, int64(held), "updates let through to a client that reads nothing")

			p.Notify("session/cancel", `{"sessionId":"s"}`)
			select {
			case err := <-turnEnded:
				require.ErrorIs(t, err, acprpc.ErrCancelled, "the waiting Notify")
			case <-ctx.Done():
				t.Fatal("the cancel did not end the turn while the client read nothing")
			}

			n := int(accepted.Load())
			for want := range n {
				m := p.ExpectNotification(ctx, "session/update")
				var u countedUpdate
				require.NoError(t, json.Unmarshal(m.Params, &u))
				require.Equal(t, want, u.Update.N, "an update lost or out of order")
			}
			p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
			assert.Zero(t, agent.Stats().UnsentNotifications)
		})
	}
}

// awaitStuck returns the updates accepted once the turn is held in Notify
// for good: its queue at the limit and no update taken for a while. A turn
// that ends first was never held back, which fails the test.
func awaitStuck(t *testing.T, agent *acprpc.Conn, accepted *atomic.Int64, turnEnded <-chan error) int64 {
	t.Helper()
	const still = 5 // polls without progress
	ctx := wiretest.Context(t)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last, same := int64(-1), 0
	for {
		select {
		case err := <-turnEnded:
			t.Fatalf("the turn ran to its end (%d updates, %v) while the client read nothing", accepted.Load(), err)
		case <-ctx.Done():
			t.Fatalf("the turn was not held back: %d updates, %+v", accepted.Load(), agent.Stats())
		case <-tick.C:
		}
		n := accepted.Load()
		if n != last || agent.Stats().UnsentNotifications == 0 {
			last, same = n, 0
			continue
		}
		if same++; same == still {
			return n
		}
	}
}

// A client with a stream per session (the TypeScript SDK's) opens a new
// session's stream once session/new's answer names the session: an agent
// that sends more updates of the new session than its limit of unsent
// notifications before that answer is not held back waiting for a GET
// that only the answer brings. The updates wait on the session's stream,
// within MaxQueuedBytes, and come in order once the client opens it.
func TestUpdatesOfANewSessionBeforeItsAnswerAreNotHeldToTheLimit(t *testing.T) {
	const updates = 200 // more than the limit, DefaultMaxUnsentNotifications
	newSession := func(ctx context.Context, _ *acprpc.Request) (any, error) {
		conn := acprpc.ConnFromContext(ctx)
		var u countedUpdate
		u.SessionID, u.Update.SessionUpdate = "s9", "available_commands_update"
		for n := range updates {
			u.Update.N = n
			if err := conn.Notify(ctx, "session/update", u); err != nil {
				return nil, err
			}
		}
		return map[string]string{"sessionId": "s9"}, nil
	}
	as := startAgent(t, wiretest.Mux{"initialize": initialized, "session/new": newSession}, nil, nil)
	c := newRawHTTP(t, as.url("http"))
	resp, _ := c.do(http.MethodPost, initRequest)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	id := resp.Header.Get(HeaderConnectionID)
	own := sseEvents(c.open(http.MethodGet, "", "Accept", "text/event-stream", HeaderConnectionID, id))
	resp, body := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`, HeaderConnectionID, id)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)

	ctx := wiretest.Context(t)
	select {
	case answer := <-own:
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s9"}}`, answer)
	case <-ctx.Done():
		t.Fatal("no answer to session/new: its handler was held in Notify")
	}
	session := sseEvents(c.open(http.MethodGet, "", "Accept", "text/event-stream", HeaderConnectionID, id, HeaderSessionID, "s9"))
	for want := range updates {
		var m struct{ Params countedUpdate }
		select {
		case ev := <-session:
			require.NoError(t, json.Unmarshal([]byte(ev), &m))
		case <-ctx.Done():
			t.Fatalf("update %d did not come", want)
		}
		require.Equal(t, want, m.Params.Update.N, "an update lost or out of order")
	}
}

// Stress: a server's WebSocket gathers a turn's frames between Send and
// Flush while control frames go out between and among them: the server's
// pings, written by a goroutine of their own, and its pongs to the
// client's pings, written by its read loop, each side pinging back to back
// all the while. Each frame arrives whole and in order: every update of
// every turn, then its answer, and every ping is answered.
func TestStressWebSocketBatchesWithPingsAndPongs(t *testing.T) {
	const turns, updates = 20, 500
	prompt := func(ctx context.Context, req *acprpc.Request) (any, error) {
		conn := acprpc.ConnFromContext(ctx)
		var u countedUpdate
		u.SessionID, u.Update.SessionUpdate = req.SessionID, "agent_message_chunk"
		for n := range updates {
			u.Update.N = n
			if err := conn.Notify(ctx, "session/update", u); err != nil {
				return nil, err
			}
		}
		return map[string]string{"stopReason": "end_turn"}, nil
	}
	as := startAgent(t, wiretest.Mux{"initialize": initialized, "session/prompt": prompt}, nil, nil)
	client := dial(t, as.url("websocket"), nil)
	p := wiretest.PeerOf(t, client)
	ctx := wiretest.Context(t)
	p.Request("0", "initialize", `{"protocolVersion":1}`)
	_, server := as.next(t)
	p.ExpectResult(ctx, "0", `{"protocolVersion":1}`)

	pinging, stop := context.WithCancel(ctx)
	var pings sync.WaitGroup
	var answered [2]atomic.Int64
	for i, side := range []*wsTransport{server.(*wsTransport), client.(*wsTransport)} {
		pings.Go(func() {
			for pinging.Err() == nil {
				if side.ws.Ping(pinging) == nil {
					answered[i].Add(1)
				}
			}
		})
	}
	for turn := range turns {
		id := strconv.Itoa(turn + 1)
		p.Request(id, "session/prompt", `{"sessionId":"s","prompt":[]}`)
		for want := range updates {
			var u countedUpdate
			require.NoError(t, json.Unmarshal(p.ExpectNotification(ctx, "session/update").Params, &u))
			require.Equal(t, want, u.Update.N, "turn %d: an update lost or out of order", turn)
		}
		p.ExpectResult(ctx, id, `{"stopReason":"end_turn"}`)
	}
	stop()
	pings.Wait()
	assert.Positive(t, answered[0].Load(), "the server's pings")
	assert.Positive(t, answered[1].Load(), "the client's pings")
}
