package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Tests of the rules that depend on the ACP version: negotiation, markers,
// v2's foreground work and its one idle ending, entity cancels, and what
// stays as it was on v1.

// v2Turns is a v2 agent for the tests: a prompt is inserted at once (or,
// with hold, once the session's earlier work has ended) and answered with
// a messageId, and its work runs on a goroutine of its own, with run.
type v2Turns struct {
	// run is the work's body; nil reports running, then waits for the
	// work's context and ends it as cancelled.
	run func(c *acprpc.Conn, w *acprpc.Work)
	// hold keeps a prompt until the session's earlier work has ended.
	hold bool
	// checkCtx answers a prompt whose context has ended -32800 instead of
	// inserting it.
	checkCtx bool

	works   chan *acprpc.Work // each inserted prompt's work
	held    chan string       // the ID of each prompt that waits
	settled chan error        // what each prompt's handler returned, for the prompts that did not insert

	mu   sync.Mutex
	busy map[string]*acprpc.Work
	wg   sync.WaitGroup
}

type v2TestKey struct{}

func newV2Turns() *v2Turns {
	return &v2Turns{
		works:   make(chan *acprpc.Work, 16),
		held:    make(chan string, 16),
		settled: make(chan error, 16),
		busy:    map[string]*acprpc.Work{},
	}
}

func (a *v2Turns) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	switch req.Method {
	case "session/prompt":
		return a.prompt(ctx, req)
	case "ping":
		return "pong", nil
	case "block":
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	if req.IsNotification() {
		return nil, nil
	}
	return nil, acprpc.MethodNotFound(req.Method)
}

func (a *v2Turns) prompt(ctx context.Context, req *acprpc.Request) (any, error) {
	a.mu.Lock()
	earlier := a.busy[req.SessionID]
	a.mu.Unlock()
	if a.hold && earlier != nil {
		a.held <- req.ID.String()
		select {
		case <-earlier.Done():
		case <-ctx.Done():
		}
	}
	if (a.hold || a.checkCtx) && ctx.Err() != nil { // cancelled before it was inserted
		a.settled <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	}
	// A context derived from the prompt's finds its work too.
	w, ok := acprpc.WorkFromContext(context.WithValue(ctx, v2TestKey{}, req.ID))
	if !ok {
		return nil, errors.New("no foreground work for a v2 prompt")
	}
	a.mu.Lock()
	a.busy[req.SessionID] = w
	a.mu.Unlock()
	conn := acprpc.ConnFromContext(ctx)
	a.wg.Go(func() {
		if a.run != nil {
			a.run(conn, w)
			return
		}
		_ = conn.Notify(w.Context(), "session/update", stateUpdate(w.SessionID(), "running"))
		<-w.Context().Done()
		_ = w.End("cancelled")
	})
	a.works <- w
	return map[string]string{"messageId": "msg_" + req.ID.String()}, nil
}

// stateUpdate is a session/update's params with a state_update.
func stateUpdate(sessionID, state string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"sessionId":%q,"update":{"sessionUpdate":"state_update","state":%q}}`, sessionID, state))
}

// chunk is a session/update's params with an agent_message_chunk.
func chunk(sessionID, text string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(
		`{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":%q}}}`,
		sessionID, text))
}

// isIdle reports whether m is a session/update with an idle state_update,
// and its stop reason.
func isIdle(m wiretest.Msg) (string, bool) {
	if m.Method != "session/update" {
		return "", false
	}
	var p struct {
		Update struct {
			SessionUpdate, State, StopReason string
		}
	}
	_ = json.Unmarshal(m.Params, &p)
	return p.Update.StopReason, p.Update.SessionUpdate == "state_update" && p.Update.State == "idle"
}

// expectIdle checks that the next line is the idle state_update with
// stopReason.
func expectIdle(t *testing.T, ctx context.Context, p *wiretest.Peer, stopReason string) {
	t.Helper()
	m := p.ExpectNotification(ctx, "session/update")
	reason, idle := isIdle(m)
	require.True(t, idle, "expected the idle state_update, got %s", m.Raw)
	assert.Equal(t, stopReason, reason, m.Raw)
}

// expectQuiet checks that nothing but the answer to a ping comes next: every
// line queued before the ping is out, and none of them is left.
func expectQuiet(t *testing.T, ctx context.Context, p *wiretest.Peer, id string) {
	t.Helper()
	p.Request(id, "ping", "")
	p.ExpectResult(ctx, id, `"pong"`)
}

func v2Options() *acprpc.Options { return &acprpc.Options{PinnedVersion: acprpc.ProtocolV2} }

// ---------------------------------------------------------------- foreground work

// A v2 turn: the prompt is answered with its messageId at once, the work
// runs on, its updates go out in order and its End sends the one idle
// state_update, after which its updates are dropped.
func TestV2TurnEndsOnce(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		late := make(chan error, 2)
		proceed := make(chan struct{})
		a := newV2Turns()
		a.run = func(c *acprpc.Conn, w *acprpc.Work) {
			_ = c.Notify(w.Context(), "session/update", stateUpdate(w.SessionID(), "running"))
			<-proceed
			_ = c.Notify(w.Context(), "session/update", chunk(w.SessionID(), "done"))
			_ = w.End("end_turn")
			late <- c.Notify(context.WithoutCancel(w.Context()), "session/update", chunk(w.SessionID(), "late"))
			late <- w.End("end_turn")
		}
		_, p := wiretest.Connect(t, tr, a, v2Options())
		p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		got := p.ExpectN(ctx, 2) // the answer and "running", in either order
		byKind := map[bool]wiretest.Msg{got[0].IsResponse(): got[0], got[1].IsResponse(): got[1]}
		assert.JSONEq(t, `{"messageId":"msg_1"}`, string(byKind[true].Result))
		assert.Contains(t, byKind[false].Raw, `"state":"running"`)
		w := wiretest.Recv(t, ctx, a.works)
		assert.Equal(t, "s", w.SessionID())
		close(proceed)
		assert.Contains(t, p.ExpectNotification(ctx, "session/update").Raw, `"done"`)
		expectIdle(t, ctx, p, "end_turn")
		assert.ErrorIs(t, wiretest.Recv(t, ctx, late), acprpc.ErrWorkEnded, "an update after the ending is dropped")
		assert.ErrorIs(t, wiretest.Recv(t, ctx, late), acprpc.ErrWorkEnded, "a second ending is dropped")
		expectQuiet(t, ctx, p, "2")
		<-w.Done()
		assert.ErrorIs(t, w.Context().Err(), context.Canceled, "the work's context ends with the work")
		a.wg.Wait()
	})
}

// session/cancel cancels the work (cause ErrSessionCancelled), and a call
// made under it gets its own $/cancel_request; the work's last updates go
// out before its one idle state_update, whose stop reason is cancelled
// whatever End is given.
func TestV2SessionCancelCascadesAndEndsOnce(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		causes := make(chan error, 1)
		a := newV2Turns()
		a.run = func(c *acprpc.Conn, w *acprpc.Work) {
			err := c.Call(w.Context(), "session/request_permission", map[string]string{"sessionId": w.SessionID()}, nil)
			causes <- errors.Join(err, context.Cause(w.Context()))
			_ = c.Notify(context.WithoutCancel(w.Context()), "session/update", chunk(w.SessionID(), "stopped"))
			_ = w.End("error") // the abort surfaced as an error: still "cancelled"
		}
		_, p := wiretest.Connect(t, tr, a, v2Options())
		p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		got := p.ExpectN(ctx, 2)
		var perm wiretest.Msg
		for _, m := range got {
			if m.IsRequest() {
				perm = m
			}
		}
		require.Equal(t, "session/request_permission", perm.Method)
		p.Notify("session/cancel", `{"sessionId":"s"}`)
		cancel := p.ExpectNotification(ctx, "$/cancel_request")
		assert.JSONEq(t, `{"requestId":`+string(perm.ID)+`}`, string(cancel.Params))
		err := wiretest.Recv(t, ctx, causes)
		assert.ErrorIs(t, err, acprpc.ErrCancelled)
		assert.ErrorIs(t, err, acprpc.ErrSessionCancelled)
		assert.Contains(t, p.ExpectNotification(ctx, "session/update").Raw, `"stopped"`)
		expectIdle(t, ctx, p, "cancelled")
		p.Respond(string(perm.ID), `{"outcome":{"outcome":"cancelled"}}`) // a late answer is dropped
		expectQuiet(t, ctx, p, "2")
		a.wg.Wait()
	})
}

// A session/cancel in the same write as its v2 prompt always finds the
// prompt's work: registered on the read goroutine before the next line is
// read. A handler that still inserts the prompt gets a cancelled work,
// which ends with one idle state_update; one that sees the cancel and does
// not insert gets -32800 and no idle state_update, since no turn began.
func TestV2CancelInTheSameWriteAsItsPrompt(t *testing.T) {
	for _, checkCtx := range []bool{false, true} {
		t.Run(fmt.Sprintf("handler checks its context %v", checkCtx), func(t *testing.T) {
			wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
				ctx := wiretest.Context(t)
				gate := make(chan struct{})
				a := newV2Turns()
				a.checkCtx = checkCtx
				h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
					if req.Method == "session/prompt" {
						<-gate // the cancel is read while the handler has not looked yet
					}
					return a.Handle(ctx, req)
				})
				_, p := wiretest.Connect(t, tr, h, v2Options())
				p.SendRaw(wiretest.RequestLine("1", "session/prompt", `{"sessionId":"s","prompt":[]}`) + "\n" +
					`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}` + "\n")
				expectQuiet(t, ctx, p, "2") // both lines are read
				close(gate)
				if checkCtx {
					p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
					assert.ErrorIs(t, wiretest.Recv(t, ctx, a.settled), acprpc.ErrSessionCancelled)
					expectQuiet(t, ctx, p, "3")
					return
				}
				// Inserted after the cancel (a result wins); the default work
				// reports running under a cancelled context (refused), then
				// ends as cancelled. Updates and the prompt's answer have no
				// fixed order in v2.
				got := p.ExpectN(ctx, 2)
				var answer, idle wiretest.Msg
				for _, m := range got {
					if m.IsResponse() {
						answer = m
					} else {
						idle = m
					}
				}
				assert.JSONEq(t, `{"messageId":"msg_1"}`, string(answer.Result))
				reason, isIdleUpdate := isIdle(idle)
				assert.True(t, isIdleUpdate, idle.Raw)
				assert.Equal(t, "cancelled", reason)
				w := wiretest.Recv(t, ctx, a.works)
				assert.ErrorIs(t, context.Cause(w.Context()), acprpc.ErrSessionCancelled, "the work was cancelled before its handler ran")
				expectQuiet(t, ctx, p, "3")
				a.wg.Wait()
			})
		})
	}
}

// A prompt held behind running work and cancelled before it is inserted is
// answered -32800 (v2 has no prompt marker), by session/cancel as by
// $/cancel_request; the running work ends with exactly one idle
// state_update; a prompt sent after the cancel starts new work.
func TestV2HeldPromptCancelledBeforeInsertion(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		a := newV2Turns()
		a.hold = true
		_, p := wiretest.Connect(t, tr, a, v2Options())
		p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		p.ExpectN(ctx, 2) // its messageId and "running"
		first := wiretest.Recv(t, ctx, a.works)

		p.Request("2", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		assert.Equal(t, "2", wiretest.Recv(t, ctx, a.held))
		p.Cancel("2") // withdrawn
		p.ExpectError(ctx, "2", acprpc.CodeRequestCancelled)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, a.settled), acprpc.ErrPeerCancelled)
		assert.NoError(t, first.Context().Err(), "withdrawing a held prompt leaves the work alone")

		p.Request("3", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		assert.Equal(t, "3", wiretest.Recv(t, ctx, a.held))
		p.Notify("session/cancel", `{"sessionId":"s"}`)
		got := p.ExpectByID(ctx, 2) // the held prompt's -32800 and the idle, in either order
		assert.EqualValues(t, acprpc.CodeRequestCancelled, got["3"].Code())
		reason, idle := isIdle(got[""])
		assert.True(t, idle)
		assert.Equal(t, "cancelled", reason)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, a.settled), acprpc.ErrSessionCancelled)
		expectQuiet(t, ctx, p, "4")

		// A prompt after the cancel is new work.
		p.Request("5", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		p.ExpectN(ctx, 2)
		second := wiretest.Recv(t, ctx, a.works)
		assert.NotSame(t, first, second)
		assert.NoError(t, second.Context().Err())
		p.Notify("session/cancel", `{"sessionId":"s"}`)
		expectIdle(t, ctx, p, "cancelled")
		a.wg.Wait()
	})
}

// Work that ignores its context: once Options.CancelGrace has passed the
// layer sends the idle state_update itself, exactly once, and drops what
// the work sends later for that turn, its own ending included.
func TestV2WorkIgnoringItsContextIsEndedOnce(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		release := make(chan struct{})
		late := make(chan error, 2)
		records := &wiretest.Recorder{}
		log := records.Logger()
		a := newV2Turns()
		a.run = func(c *acprpc.Conn, w *acprpc.Work) {
			_ = c.Notify(w.Context(), "session/update", stateUpdate(w.SessionID(), "running"))
			<-release // deaf to its context
			late <- c.Notify(context.WithoutCancel(w.Context()), "session/update", chunk(w.SessionID(), "late"))
			late <- w.End("end_turn")
		}
		opts := v2Options()
		opts.CancelGrace = 20 * time.Millisecond
		opts.Logger = log
		_, p := wiretest.Connect(t, tr, a, opts)
		p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		p.ExpectN(ctx, 2)
		w := wiretest.Recv(t, ctx, a.works)
		p.Notify("session/cancel", `{"sessionId":"s"}`)
		expectIdle(t, ctx, p, "cancelled")
		<-w.Done()
		close(release)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, late), acprpc.ErrWorkEnded)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, late), acprpc.ErrWorkEnded)
		expectQuiet(t, ctx, p, "2")
		_, warned := records.FindLogged(0, "did not end within its grace period")
		assert.True(t, warned)
		a.wg.Wait()
	})
}

// A work whose prompt was answered, inserted, has started even if it sent
// nothing: when it ignores its cancel, the layer sends its idle
// state_update once the grace period has passed.
func TestV2SilentWorkIsEndedByTheLayer(t *testing.T) {
	ctx := wiretest.Context(t)
	release := make(chan struct{})
	late := make(chan error, 1)
	a := newV2Turns()
	a.run = func(_ *acprpc.Conn, w *acprpc.Work) {
		<-release // sends nothing, and is deaf to its cancel
		late <- w.End("end_turn")
	}
	opts := v2Options()
	opts.CancelGrace = 20 * time.Millisecond
	_, p := wiretest.Connect(t, wiretest.Transports[0], a, opts)
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.ExpectResult(ctx, "1", `{"messageId":"msg_1"}`)
	p.Notify("session/cancel", `{"sessionId":"s"}`)
	expectIdle(t, ctx, p, "cancelled")
	close(release)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, late), acprpc.ErrWorkEnded)
	expectQuiet(t, ctx, p, "2")
	a.wg.Wait()
}

// An idle state_update the application sends itself with Notify is the
// work's ending too: de-duplicated with End and with the layer's own, and
// turned into "cancelled" for a cancelled work.
func TestV2IdleNotifyIsTheEnding(t *testing.T) {
	ctx := wiretest.Context(t)
	ends := make(chan error, 3)
	a := newV2Turns()
	a.run = func(c *acprpc.Conn, w *acprpc.Work) {
		<-w.Context().Done()
		idle := json.RawMessage(`{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}`)
		ends <- c.Notify(context.WithoutCancel(w.Context()), "session/update", idle)
		ends <- c.Notify(context.WithoutCancel(w.Context()), "session/update", idle)
		ends <- w.End("cancelled")
	}
	_, p := wiretest.Connect(t, wiretest.Transports[0], a, v2Options())
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.ExpectAnswer(ctx, "1")
	p.Notify("session/cancel", `{"sessionId":"s"}`)
	expectIdle(t, ctx, p, "cancelled")
	assert.NoError(t, wiretest.Recv(t, ctx, ends))
	assert.ErrorIs(t, wiretest.Recv(t, ctx, ends), acprpc.ErrWorkEnded)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, ends), acprpc.ErrWorkEnded)
	expectQuiet(t, ctx, p, "2")
	a.wg.Wait()
}

// A v2 session/close is a request: it cancels the session's work and held
// prompts before it is served, and is answered only after the work's idle
// state_update.
func TestV2SessionCloseAnsweredAfterTheIdle(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		a := newV2Turns()
		a.hold = true
		proceed := make(chan struct{})
		a.run = func(c *acprpc.Conn, w *acprpc.Work) {
			<-w.Context().Done()
			<-proceed // the close is already being served
			_ = c.Notify(context.WithoutCancel(w.Context()), "session/update", chunk(w.SessionID(), "stopped"))
			_ = w.End("cancelled")
		}
		closed := make(chan struct{})
		h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			if req.Method == "session/close" {
				close(closed)
				return struct{}{}, nil
			}
			return a.Handle(ctx, req)
		})
		_, p := wiretest.Connect(t, tr, h, v2Options())
		p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		p.ExpectAnswer(ctx, "1")
		p.Request("2", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		wiretest.Recv(t, ctx, a.held)
		p.Request("3", "session/close", `{"sessionId":"s"}`)
		p.ExpectError(ctx, "2", acprpc.CodeRequestCancelled)
		<-closed
		close(proceed)
		assert.Contains(t, p.ExpectNotification(ctx, "session/update").Raw, `"stopped"`)
		expectIdle(t, ctx, p, "cancelled")
		p.ExpectResult(ctx, "3", `{}`)
		a.wg.Wait()
	})
}

// Closing the connection cancels the work with ErrConnClosed and sends
// nothing.
func TestV2WorkEndsWithTheConnection(t *testing.T) {
	ctx := wiretest.Context(t)
	a := newV2Turns()
	ended := make(chan error, 1)
	a.run = func(c *acprpc.Conn, w *acprpc.Work) {
		<-w.Context().Done()
		ended <- errors.Join(context.Cause(w.Context()), w.End("cancelled"))
	}
	c, p := wiretest.Connect(t, wiretest.Transports[0], a, v2Options())
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.ExpectAnswer(ctx, "1")
	wiretest.Recv(t, ctx, a.works)
	require.NoError(t, c.Close())
	err := wiretest.Recv(t, ctx, ended)
	assert.ErrorIs(t, err, acprpc.ErrConnClosed)
	assert.Empty(t, p.Rest(ctx), "nothing is sent for work the connection's end cancelled")
	a.wg.Wait()
}

// On ACP v2, Shutdown cancels each session's foreground work with
// ErrShutdown, and the work's one idle state_update, with stop reason
// cancelled, goes out before the output ends.
func TestShutdownEndsV2Work(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], acprpc.HandlerFunc(wiretest.Ping), v2Options())
	w := c.BeginWork("s")
	causes := make(chan error, 1)
	go func() {
		<-w.Context().Done()
		causes <- context.Cause(w.Context())
		_ = w.End("end_turn")
	}()
	done := shutdownAsync(ctx, c)
	rest := p.Rest(ctx)
	require.NoError(t, wiretest.Recv(t, ctx, done))
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrShutdown)
	require.Len(t, rest, 1, "%v", rest)
	reason, idle := isIdle(rest[0])
	require.True(t, idle, rest[0].Raw)
	assert.Equal(t, "cancelled", reason)
}

// BeginWork starts work of the agent's own, with no prompt; its End sends
// the idle state_update. A prompt read while it runs joins it.
func TestV2BeginWork(t *testing.T) {
	ctx := wiretest.Context(t)
	a := newV2Turns()
	a.run = func(*acprpc.Conn, *acprpc.Work) {}
	c, p := wiretest.Connect(t, wiretest.Transports[0], a, v2Options())
	w := c.BeginWork("s")
	assert.Same(t, w, c.BeginWork("s"), "the session's work in progress")
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.ExpectAnswer(ctx, "1")
	assert.Same(t, w, wiretest.Recv(t, ctx, a.works), "a prompt joins the work in progress")
	require.NoError(t, w.End("end_turn"))
	expectIdle(t, ctx, p, "end_turn")
	assert.NotSame(t, w, c.BeginWork("s"), "after its end, new work")

	// The layer writes the idle state_update itself: any session ID
	// survives it.
	odd := "sé\"\n\u2028x"
	require.NoError(t, c.BeginWork(odd).End(""))
	m := p.ExpectNotification(ctx, "session/update")
	var params struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	require.NoError(t, json.Unmarshal(m.Params, &params), m.Raw)
	assert.Equal(t, odd, params.SessionID)
	assert.JSONEq(t, `{"sessionUpdate":"state_update","state":"idle"}`, string(params.Update))
	a.wg.Wait()
}

// On v1 a prompt has no foreground work, and its updates are never
// dropped or reordered by the layer.
func TestV1HasNoWork(t *testing.T) {
	ctx := wiretest.Context(t)
	found := make(chan bool, 1)
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		_, ok := acprpc.WorkFromContext(ctx)
		found <- ok
		return map[string]string{"stopReason": "end_turn"}, nil
	})
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{PinnedVersion: acprpc.ProtocolV1})
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.ExpectResult(ctx, "1", `{"stopReason":"end_turn"}`)
	assert.False(t, wiretest.Recv(t, ctx, found))
}

// ---------------------------------------------------------------- the work table

// Ended work is forgotten. A peer sends 100 prompts in 100 sessions, each
// with a 128 KiB session ID, and the agent rejects every one; then the
// agent begins and ends work of its own in 5,000 sessions, as an ordinary
// long-running agent does. The heap holds none of them afterwards: the
// table used to keep each session's last work, ID and all, for the life of
// the connection (13 MiB for the prompts here, and 3 MiB for the works).
func TestV2EndedWorkIsForgotten(t *testing.T) {
	const prompts, idSize, works = 100, 128 << 10, 5000
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // 5,100 exchanges under the race detector
	defer cancel()
	reject := func(context.Context, *acprpc.Request) (any, error) {
		return nil, &acprpc.Error{Code: acprpc.CodeInvalidParams, Message: "Invalid params: no such session"}
	}
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"session/prompt": reject}, v2Options())
	p.Request("0", "session/prompt", `{"sessionId":"warm","prompt":[]}`)
	p.ExpectError(ctx, "0", acprpc.CodeInvalidParams)
	require.NoError(t, c.BeginWork("warm").End("end_turn"))
	p.ExpectNotification(ctx, "session/update")

	before := bpHeap()
	pad := strings.Repeat("s", idSize)
	for i := 1; i <= prompts; i++ {
		id := strconv.Itoa(i)
		p.Request(id, "session/prompt", `{"sessionId":"`+pad+id+`","prompt":[]}`)
		p.ExpectError(ctx, id, acprpc.CodeInvalidParams)
	}
	afterPrompts := bpHeap()
	for i := range works {
		require.NoError(t, c.BeginWork("session-"+strconv.Itoa(i)).End("end_turn"))
		p.ExpectNotification(ctx, "session/update")
	}
	afterWorks := bpHeap()
	byPrompts, byWorks := int64(afterPrompts)-int64(before), int64(afterWorks)-int64(afterPrompts)
	t.Logf("heap grew by %.2f MiB after %d rejected prompts with session IDs of %d KiB, by %.2f MiB after %d ended works",
		float64(byPrompts)/(1<<20), prompts, idSize>>10, float64(byWorks)/(1<<20), works)
	assert.Less(t, byPrompts, int64(2<<20), "the rejected prompts' works are still held")
	assert.Less(t, byWorks, int64(1<<20), "the ended works are still held")
}

// A cancelled work that is still winding down when a new prompt arrives in
// its session (prompt, session/cancel, a new prompt held behind it, as
// docs/versions.md advises) is not forgotten: session/close is answered
// only after its idle state_update, and Shutdown closes only after it.
// The work ignores its cancel, so the layer ends it when its grace period
// has passed; every started work ends with exactly one idle.
func TestV2CancelledWorkWindingDownIsKept(t *testing.T) {
	for _, end := range []string{"session/close", "Shutdown"} {
		t.Run(end, func(t *testing.T) {
			ctx := wiretest.Context(t)
			release := make(chan struct{})
			a := newV2Turns()
			a.hold = true
			a.run = func(c *acprpc.Conn, w *acprpc.Work) {
				_ = c.Notify(w.Context(), "session/update", stateUpdate(w.SessionID(), "running"))
				<-release // deaf to its cancel
				_ = w.End("end_turn")
			}
			h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
				if req.Method == "session/close" {
					return struct{}{}, nil
				}
				return a.Handle(ctx, req)
			})
			opts := v2Options()
			opts.CancelGrace = 300 * time.Millisecond
			c, p := wiretest.Connect(t, wiretest.Transports[0], h, opts)
			defer a.wg.Wait()
			defer close(release)
			p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
			p.ExpectN(ctx, 2) // its messageId and "running"
			p.Notify("session/cancel", `{"sessionId":"s"}`)
			p.Request("2", "session/prompt", `{"sessionId":"s","prompt":[]}`)
			assert.Equal(t, "2", wiretest.Recv(t, ctx, a.held))

			var rest []wiretest.Msg
			if end == "session/close" {
				p.Request("3", "session/close", `{"sessionId":"s"}`)
				for len(rest) == 0 || string(rest[len(rest)-1].ID) != "3" {
					rest = append(rest, p.Expect(ctx))
				}
				expectQuiet(t, ctx, p, "4")
			} else {
				done := shutdownAsync(ctx, c)
				rest = p.Rest(ctx)
				require.NoError(t, wiretest.Recv(t, ctx, done))
			}
			idles := 0
			for _, m := range rest {
				if reason, idle := isIdle(m); idle {
					idles++
					assert.Equal(t, "cancelled", reason)
				}
			}
			assert.Equal(t, 1, idles, "the cancelled work's one idle state_update before the %s's end: %v", end, rest)
			assert.Equal(t, 1, countAnswers(rest, "2"))
		})
	}
}

// A prompt that arrives while the session's cancelled work is still winding
// down starts new work, not cancelled: the cancelled work ends with its own
// idle state_update ("cancelled"), the new one with its own.
func TestV2PromptAfterCancelIsNewWork(t *testing.T) {
	ctx := wiretest.Context(t)
	release := make(chan struct{})
	a := newV2Turns()
	a.run = func(c *acprpc.Conn, w *acprpc.Work) {
		_ = c.Notify(w.Context(), "session/update", stateUpdate(w.SessionID(), "running"))
		<-release // deaf to its cancel
		_ = w.End("end_turn")
	}
	opts := v2Options()
	opts.CancelGrace = time.Minute // the first work winds down until it is released
	_, p := wiretest.Connect(t, wiretest.Transports[0], a, opts)
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.ExpectN(ctx, 2)
	first := wiretest.Recv(t, ctx, a.works)
	p.Notify("session/cancel", `{"sessionId":"s"}`)
	p.Request("2", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.ExpectN(ctx, 2)
	second := wiretest.Recv(t, ctx, a.works)
	assert.NotSame(t, first, second, "a prompt after the cancel joined the cancelled work")
	assert.Error(t, first.Context().Err())
	assert.NoError(t, second.Context().Err(), "the new work is not cancelled")
	close(release)
	a.wg.Wait()
	reasons := map[string]int{}
	for _, m := range p.ExpectN(ctx, 2) {
		reason, idle := isIdle(m)
		require.True(t, idle, m.Raw)
		reasons[reason]++
	}
	assert.Equal(t, map[string]int{"cancelled": 1, "end_turn": 1}, reasons)
	expectQuiet(t, ctx, p, "3")
}
