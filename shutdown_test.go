package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Tests of Conn.Shutdown, ACP's internal cancellation: every request in
// flight is answered as cancelled before the connection closes.

// shutdownAsync runs Shutdown on a goroutine of its own and returns its
// result channel; the test reads the peer meanwhile, since a peer that does
// not read holds the flush.
func shutdownAsync(ctx context.Context, c *acprpc.Conn) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.Shutdown(ctx) }()
	return done
}

// turnMarker is the result that answers a cancelled x/turn: the turn
// tests run with it as x/turn's cancel marker (Options.CancelMarkers).
var turnMarker = json.RawMessage(`{"outcome":"cancelled"}`)

// withTurnMarker is o with turnMarker as x/turn's cancel marker.
func withTurnMarker(o acprpc.Options) *acprpc.Options {
	o.CancelMarkers = map[string]json.RawMessage{"x/turn": turnMarker}
	return &o
}

// turnResult is what a turn answers.
type turnResult struct {
	Outcome string `json:"outcome"`
}

// turnAgent serves x/turn as an agent serves a turn: it waits for its
// context, reports the cause, sends a last x/note, and returns the cause as
// its error, which the connection turns into the marker. Any other method
// blocks the same way and ends -32800.
type turnAgent struct {
	started chan string
	causes  chan error
}

func newTurnAgent() *turnAgent {
	return &turnAgent{started: make(chan string, 16), causes: make(chan error, 16)}
}

func (a *turnAgent) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		return nil, nil
	}
	a.started <- req.Method
	<-ctx.Done()
	a.causes <- context.Cause(ctx)
	if req.Method == "x/turn" {
		conn := acprpc.ConnFromContext(ctx)
		_ = conn.Notify(context.WithoutCancel(ctx), "x/note", json.RawMessage(`{"text":"last"}`))
	}
	return nil, context.Cause(ctx)
}

// Shutdown cancels every request in flight with ErrShutdown; each is
// answered as cancelled (the marker for x/turn, after its last note;
// -32800 for the rest) before the output ends, and Shutdown returns
// nil.
func TestShutdownAnswersInFlightAsCancelled(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		a := newTurnAgent()
		c, p := wiretest.Connect(t, tr, a, withTurnMarker(acprpc.Options{}))
		p.Request("1", "x/turn", "")
		p.Request(`"t"`, "x/tool", `{}`)
		wiretest.Recv(t, ctx, a.started)
		wiretest.Recv(t, ctx, a.started)
		done := shutdownAsync(ctx, c)
		rest := p.Rest(ctx)
		require.NoError(t, wiretest.Recv(t, ctx, done))
		for range 2 {
			assert.ErrorIs(t, wiretest.Recv(t, ctx, a.causes), acprpc.ErrShutdown)
		}
		require.Len(t, rest, 3, "%v", rest)
		byID := map[string]wiretest.Msg{}
		for _, m := range rest {
			byID[string(m.ID)] = m
		}
		assert.JSONEq(t, string(turnMarker), string(byID["1"].Result))
		assert.Equal(t, int64(acprpc.CodeRequestCancelled), byID[`"t"`].Code())
		update, answer := -1, -1
		for i, m := range rest {
			switch {
			case m.Method == "x/note":
				update = i
			case string(m.ID) == "1":
				answer = i
			}
		}
		assert.Less(t, update, answer, "the turn's last note goes out before its answer")
		assert.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
		assert.ErrorIs(t, c.Err(), acprpc.ErrShutdown)
	})
}

// holdAgent's requests report their cause once cancelled, then wait for
// release before answering with a result; with a negative CancelGrace, the
// answer is theirs.
type holdAgent struct {
	started   chan struct{}
	cancelled chan error
	release   chan struct{}
	calls     atomic.Int32
}

func newHoldAgent() *holdAgent {
	return &holdAgent{started: make(chan struct{}, 16), cancelled: make(chan error, 16), release: make(chan struct{})}
}

func (a *holdAgent) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		return nil, nil
	}
	a.calls.Add(1)
	a.started <- struct{}{}
	<-ctx.Done()
	a.cancelled <- context.Cause(ctx)
	<-a.release
	return "finished anyway", nil
}

// Once Shutdown has begun, a new request is answered at once as cancelled
// (its marker, or -32800) and never reaches the handler; a handler that
// returns a result after the cancel has it sent.
func TestShutdownRefusesNewRequests(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		a := newHoldAgent()
		c, p := wiretest.Connect(t, tr, a, withTurnMarker(acprpc.Options{CancelGrace: -1}))
		p.Request("1", "x/hold", "")
		p.Request(`"h"`, "x/hold", "")
		wiretest.Recv(t, ctx, a.started)
		wiretest.Recv(t, ctx, a.started)
		done := shutdownAsync(ctx, c)
		for range 2 {
			require.ErrorIs(t, wiretest.Recv(t, ctx, a.cancelled), acprpc.ErrShutdown)
		}
		p.Request("2", "x/turn", "")
		p.Request("3", "x/new", "")
		p.ExpectResult(ctx, "2", string(turnMarker))
		p.ExpectError(ctx, "3", acprpc.CodeRequestCancelled)
		close(a.release)
		rest := p.Rest(ctx)
		require.NoError(t, wiretest.Recv(t, ctx, done))
		require.Len(t, rest, 2)
		for _, m := range rest {
			assert.JSONEq(t, `"finished anyway"`, string(m.Result))
		}
		assert.Equal(t, int32(2), a.calls.Load(), "only the requests read before Shutdown reached the handler")
	})
}

// Shutdown cancels this side's own calls: each is sent $/cancel_request. A
// call without WaitAfterCancel returns at once, matching ErrCancelled and
// ErrShutdown; one with it gets the peer's answer (here the marker). A
// call made once Shutdown has begun fails at once and sends nothing.
func TestShutdownCancelsOwnCalls(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	type result struct {
		res turnResult
		err error
	}
	waiting := make(chan result, 1)
	go func() {
		res, err := acprpc.CallFor[turnResult](ctx, c, "x/turn", nil, acprpc.WaitAfterCancel(time.Minute))
		waiting <- result{res, err}
	}()
	prompt := p.ExpectRequest(ctx, "x/turn")
	quick := make(chan error, 1)
	go func() { quick <- c.Call(ctx, "x/slow", nil, nil) }()
	slow := p.ExpectRequest(ctx, "x/slow")

	done := shutdownAsync(ctx, c)
	cancels := p.ExpectN(ctx, 2)
	var cancelled []string
	for _, m := range cancels {
		require.Equal(t, acprpc.MethodCancelRequest, m.Method, m.Raw)
		cancelled = append(cancelled, string(m.ParamMember("requestId")))
	}
	assert.ElementsMatch(t, []string{string(prompt.ID), string(slow.ID)}, cancelled)

	err := wiretest.Recv(t, ctx, quick)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.ErrorIs(t, err, acprpc.ErrShutdown)
	assert.NotErrorIs(t, err, acprpc.ErrConnClosed)

	late := c.Call(ctx, "x/late", nil, nil)
	assert.ErrorIs(t, late, acprpc.ErrShutdown)
	assert.ErrorIs(t, late, acprpc.ErrCancelled)

	p.Respond(string(prompt.ID), string(turnMarker))
	got := wiretest.Recv(t, ctx, waiting)
	require.NoError(t, got.err)
	assert.Equal(t, "cancelled", got.res.Outcome)
	assert.Empty(t, p.Rest(ctx), "the late call sent nothing")
	require.NoError(t, wiretest.Recv(t, ctx, done))
}

// A handler's calls to the peer are cancelled with it: each gets its own
// $/cancel_request, and the request is answered after.
func TestShutdownCascadesIntoNestedCalls(t *testing.T) {
	ctx := wiretest.Context(t)
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		return nil, acprpc.ConnFromContext(ctx).Call(ctx, "x/ask", nil, nil)
	})
	c, p := wiretest.Connect(t, wiretest.Transports[0], h, withTurnMarker(acprpc.Options{}))
	p.Request("1", "x/turn", "")
	ask := p.ExpectRequest(ctx, "x/ask")
	done := shutdownAsync(ctx, c)
	cancel := p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
	assert.Equal(t, string(ask.ID), string(cancel.ParamMember("requestId")))
	p.ExpectResult(ctx, "1", string(turnMarker))
	assert.Empty(t, p.Rest(ctx))
	require.NoError(t, wiretest.Recv(t, ctx, done))
}

// A handler that ignores its context is answered for once CancelGrace has
// passed, and Shutdown does not wait for it any longer.
func TestShutdownGraceAnswersForStuckHandler(t *testing.T) {
	ctx := wiretest.Context(t)
	a := newHoldAgent()
	defer close(a.release)
	c, p := wiretest.Connect(t, wiretest.Transports[0], a, withTurnMarker(acprpc.Options{CancelGrace: 20 * time.Millisecond}))
	p.Request("1", "x/turn", "")
	wiretest.Recv(t, ctx, a.started)
	done := shutdownAsync(ctx, c)
	require.ErrorIs(t, wiretest.Recv(t, ctx, a.cancelled), acprpc.ErrShutdown)
	p.ExpectResult(ctx, "1", string(turnMarker))
	assert.Empty(t, p.Rest(ctx))
	require.NoError(t, wiretest.Recv(t, ctx, done))
}

// If Shutdown's context ends first, the connection closes at once, as
// Close does, and Shutdown returns the context's error.
func TestShutdownContextEndsFirst(t *testing.T) {
	ctx := wiretest.Context(t)
	a := newHoldAgent()
	defer close(a.release)
	c, p := wiretest.Connect(t, wiretest.Transports[0], a, &acprpc.Options{CancelGrace: -1})
	p.Request("1", "x/hold", "")
	wiretest.Recv(t, ctx, a.started)
	shutdownCtx, stop := context.WithCancel(ctx)
	done := shutdownAsync(shutdownCtx, c)
	require.ErrorIs(t, wiretest.Recv(t, ctx, a.cancelled), acprpc.ErrShutdown)
	stop()
	require.ErrorIs(t, wiretest.Recv(t, ctx, done), context.Canceled)
	wiretest.Recv(t, ctx, c.Done())
	assert.Empty(t, p.Rest(ctx), "the held request's answer is dropped, as on Close")
}

// Shutdown on a connection that has closed returns why it closed; a second
// Shutdown after a graceful one returns nil.
func TestShutdownAfterCloseAndTwice(t *testing.T) {
	ctx := wiretest.Context(t)
	c, _ := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, c.Shutdown(ctx), acprpc.ErrConnClosed)

	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	require.NoError(t, c.Shutdown(ctx))
	require.NoError(t, c.Shutdown(ctx))
	assert.ErrorIs(t, c.Err(), acprpc.ErrShutdown)
	assert.Empty(t, p.Rest(ctx))
}

// Two Shutdowns at once both return nil once the connection is closed.
func TestShutdownConcurrent(t *testing.T) {
	ctx := wiretest.Context(t)
	a := newTurnAgent()
	c, p := wiretest.Connect(t, wiretest.Transports[0], a, withTurnMarker(acprpc.Options{}))
	p.Request("1", "x/turn", "")
	wiretest.Recv(t, ctx, a.started)
	first, second := shutdownAsync(ctx, c), shutdownAsync(ctx, c)
	rest := p.Rest(ctx)
	require.NoError(t, wiretest.Recv(t, ctx, first))
	require.NoError(t, wiretest.Recv(t, ctx, second))
	assert.Equal(t, 1, countAnswers(rest, "1"))
}

func countAnswers(msgs []wiretest.Msg, id string) int {
	n := 0
	for _, m := range msgs {
		if m.IsResponse() && string(m.ID) == id {
			n++
		}
	}
	return n
}

// errBudget is an application's reason to cancel a request itself.
var errBudget = errors.New("token budget exhausted")

// ---------------------------------------------------------------- stress

// Shutdown racing a stream of requests and cancels: every request the
// connection read is answered exactly once, with a result or as cancelled;
// nothing else is ever sent; and Shutdown returns nil.
func TestShutdownStress(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		tr := wiretest.Transports[round%len(wiretest.Transports)]
		t.Run(fmt.Sprintf("%d/%s", round, tr.Name), func(t *testing.T) { shutdownStressRound(t, tr) })
	}
}

func shutdownStressRound(t *testing.T, tr wiretest.Transport) {
	ctx := wiretest.Context(t)
	var mu sync.Mutex
	received := map[string]bool{}
	hooks := acprpc.Hooks{Received: func(_ context.Context, m *acprpc.Message) {
		if m.Kind == acprpc.KindRequest {
			mu.Lock()
			received[m.ID.String()] = true
			mu.Unlock()
		}
	}}
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method == "fast" {
			return "done", nil
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	c, p := wiretest.Connect(t, tr, h, &acprpc.Options{Hooks: hooks})
	const n = 200
	var sender sync.WaitGroup
	sender.Go(func() {
		for i := range n {
			method := "slow"
			if i%3 == 0 {
				method = "fast"
			}
			if p.TrySend(wiretest.RequestLine(fmt.Sprint(i), method, "")+"\n") != nil {
				return // the connection has closed
			}
			if i%4 == 1 && p.TrySend(wiretest.CancelLine(fmt.Sprint(i))+"\n") != nil {
				return
			}
		}
	})
	var out []wiretest.Msg
	reading := make(chan struct{})
	go func() {
		defer close(reading)
		for {
			m, err := p.Next(ctx)
			if err != nil {
				return
			}
			out = append(out, m)
		}
	}()
	if err := c.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	<-reading
	p.Close() // ends a send blocked on a synchronous pipe
	sender.Wait()

	answers := map[string]int{}
	for _, m := range out {
		require.True(t, m.IsResponse(), "only answers are sent: %s", m.Raw)
		answers[string(m.ID)]++
		if m.Error != nil {
			assert.Equal(t, int64(acprpc.CodeRequestCancelled), m.Code(), m.Raw)
		} else {
			assert.JSONEq(t, `"done"`, string(m.Result), m.Raw)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for id := range received {
		assert.Equal(t, 1, answers[id], "request %s was read, and answered %d times", id, answers[id])
	}
	for id := range answers {
		assert.True(t, received[id], "answer to %s, which was never read", id)
	}
}
