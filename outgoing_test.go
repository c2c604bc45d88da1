package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// goCall runs a Call on a goroutine of its own and reports its error.
func goCall(c *acprpc.Conn, ctx context.Context, method string, params, result any, opts ...acprpc.CallOption) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.Call(ctx, method, params, result, opts...) }()
	return done
}

// assertCancelledCall checks the error of a Call whose context ended.
func assertCancelledCall(t *testing.T, err error, ctxErr error, method, id string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.ErrorIs(t, err, ctxErr)
	var ce *acprpc.CallError
	if assert.ErrorAs(t, err, &ce) {
		assert.Equal(t, method, ce.Method)
		assert.Equal(t, id, ce.ID.String())
	}
	assert.NotErrorIs(t, err, acprpc.ErrConnClosed)
}

// Call IDs count up from 1 and are never reused, not even the ID of a
// cancelled call whose answer is still due; its late answer is dropped
// quietly and never taken for another call's.
func TestCallIDsAndLateAnswer(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		log := &wiretest.Recorder{}
		logger := log.Logger()
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"ping": wiretest.Ping}, &acprpc.Options{Logger: logger})

		var r1 string
		done := goCall(c, ctx, "peer/one", map[string]int{"n": 1}, &r1)
		m := p.ExpectRequest(ctx, "peer/one")
		assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"peer/one","params":{"n":1}}`, m.Raw)
		p.Respond("1", `"first"`)
		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.Equal(t, "first", r1)

		ctx2, cancel2 := context.WithCancel(ctx)
		done = goCall(c, ctx2, "peer/two", nil, nil)
		m = p.ExpectRequest(ctx, "peer/two")
		assert.Equal(t, `{"jsonrpc":"2.0","id":2,"method":"peer/two"}`, m.Raw)
		cancel2()
		assertCancelledCall(t, wiretest.Recv(t, ctx, done), context.Canceled, "peer/two", "2")
		cm := p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		assert.Equal(t, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":2}}`, cm.Raw)

		var r3 string
		done = goCall(c, ctx, "peer/three", []int{3}, &r3)
		m = p.ExpectRequest(ctx, "peer/three")
		assert.Equal(t, "3", string(m.ID))
		p.Respond(`"3"`, `"string id: not ours"`)
		p.Respond("2", `"late answer to two"`)
		p.Request("1", "ping", "")
		p.ExpectResult(ctx, "1", `"pong"`)
		select {
		case err := <-done:
			t.Fatalf("call 3 took another answer: %v %q", err, r3)
		default:
		}
		assert.Equal(t, 1, c.Stats().OutgoingInFlight)
		p.Respond("3", `"third"`)
		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.Equal(t, "third", r3)

		for _, r := range log.Logged() {
			assert.Less(t, r.Level, slog.LevelWarn, "a late answer is not worth a warning: %v", r)
		}
		require.NoError(t, c.Close())
		assert.Empty(t, p.Rest(ctx), "a late answer was answered")
	})
}

// Concurrent calls all get their own IDs and their own answers.
func TestCallConcurrent(t *testing.T) {
	const n = 64
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		l := wiretest.NewWire(t, wiretest.Side{}, wiretest.Side{Handler: wiretest.Mux{"echo": wiretest.Echo}}, wiretest.With{Relay: tr})
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				var out map[string]int
				if err := l.A.Call(ctx, "echo", map[string]int{"i": i}, &out); err != nil {
					errs <- err
					return
				}
				if out["i"] != i {
					errs <- fmt.Errorf("call %d got %v", i, out)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		ids := map[string]bool{}
		for _, m := range l.Lines(wiretest.AtoB) {
			require.True(t, m.IsRequest(), m.Raw)
			assert.False(t, ids[string(m.ID)], "id %s reused", m.ID)
			ids[string(m.ID)] = true
		}
		for i := 1; i <= n; i++ {
			assert.True(t, ids[strconv.Itoa(i)], "id %d missing", i)
		}
	})
}

// When ctx ends first the peer gets exactly one $/cancel_request with the
// call's ID, and Call returns at once with an error that is both ctx.Err()
// and ErrCancelled.
func TestCallCancelSendsOneCancel(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, nil, nil)

		cctx, cancel := context.WithCancel(ctx)
		done := goCall(c, cctx, "peer/slow", nil, nil)
		req := p.ExpectRequest(ctx, "peer/slow")
		cancel()
		assertCancelledCall(t, wiretest.Recv(t, ctx, done), context.Canceled, "peer/slow", string(req.ID))
		cm := p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		assert.Equal(t, string(req.ID), string(cm.ParamMember("requestId")))

		dctx := newDeadline(ctx)
		done = goCall(c, dctx, "peer/deadline", nil, nil)
		req2 := p.ExpectRequest(ctx, "peer/deadline")
		dctx.expire()
		assertCancelledCall(t, wiretest.Recv(t, ctx, done), context.DeadlineExceeded, "peer/deadline", string(req2.ID))
		cm = p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		assert.Equal(t, string(req2.ID), string(cm.ParamMember("requestId")))

		assert.EqualValues(t, 2, c.Stats().CancelsSent)
		require.NoError(t, c.Close())
		assert.Empty(t, p.Rest(ctx), "more than one cancel")
	})
}

// deadline is a context whose deadline passes when the test says so, so that
// a test of a call's deadline does not race the clock: the call is on the
// wire before its deadline passes, however loaded the machine.
type deadline struct {
	context.Context
	done chan struct{}
}

func newDeadline(parent context.Context) *deadline {
	return &deadline{Context: parent, done: make(chan struct{})}
}

func (d *deadline) expire()               { close(d.done) }
func (d *deadline) Done() <-chan struct{} { return d.done }
func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A Call whose context has already ended sends nothing at all.
func TestCallWithEndedContextSendsNothing(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err := c.Call(cctx, "peer/never", nil, nil)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, c.Notify(ctx, "peer/marker", nil))
	p.ExpectNotification(ctx, "peer/marker")
	assert.Zero(t, c.Stats().CancelsSent)
	assert.Zero(t, c.Stats().OutgoingInFlight)
}

// WaitAfterCancel waits, a bounded time, for the peer's answer to a
// cancelled call: a marker or partial result comes back with a nil error,
// a -32800 answer as an error that is ErrCancelled, ctx.Err() and the
// peer's *Error; no answer in time is the plain cancelled error.
func TestCallWaitAfterCancel(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, nil, &acprpc.Options{WaitAfterCancel: time.Minute})

		// Marker: nil error, result decoded.
		cctx, cancel := context.WithCancel(ctx)
		var res struct{ Outcome string }
		done := goCall(c, cctx, "x/work", map[string]int{"n": 1}, &res)
		req := p.ExpectRequest(ctx, "x/work")
		cancel()
		p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		select {
		case err := <-done:
			t.Fatalf("Call returned before the answer it waits for: %v", err)
		default:
		}
		p.Respond(string(req.ID), `{"outcome":"cancelled"}`)
		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.Equal(t, "cancelled", res.Outcome)

		// -32800: an error matching all three.
		cctx, cancel = context.WithCancel(ctx)
		done = goCall(c, cctx, "x/op", nil, nil)
		req = p.ExpectRequest(ctx, "x/op")
		cancel()
		p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		p.Send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32800,"message":"Request cancelled","data":{"why":"asked"}}}`)
		err := wiretest.Recv(t, ctx, done)
		assertCancelledCall(t, err, context.Canceled, "x/op", string(req.ID))
		var rpcErr *acprpc.Error
		require.ErrorAs(t, err, &rpcErr)
		assert.EqualValues(t, acprpc.CodeRequestCancelled, rpcErr.Code)
		assert.JSONEq(t, `{"why":"asked"}`, string(rpcErr.Data))

		// Per call: no wait, even though the Options say a minute.
		cctx, cancel = context.WithCancel(ctx)
		done = goCall(c, cctx, "x/nowait", nil, nil, acprpc.WaitAfterCancel(0))
		req = p.ExpectRequest(ctx, "x/nowait")
		cancel()
		assertCancelledCall(t, wiretest.Recv(t, ctx, done), context.Canceled, "x/nowait", string(req.ID))
		p.ExpectNotification(ctx, acprpc.MethodCancelRequest)

		// Per call: a short wait that runs out.
		cctx, cancel = context.WithCancel(ctx)
		done = goCall(c, cctx, "x/short", nil, nil, acprpc.WaitAfterCancel(20*time.Millisecond))
		req = p.ExpectRequest(ctx, "x/short")
		cancel()
		p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		err = wiretest.Recv(t, ctx, done)
		assertCancelledCall(t, err, context.Canceled, "x/short", string(req.ID))
		assert.False(t, errors.As(err, &rpcErr), "no answer came, yet: %v", err)
	})
}

// The per-call option works without the connection-wide one.
func TestCallWaitAfterCancelPerCall(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[2], nil, nil)
	cctx, cancel := context.WithCancel(ctx)
	var res map[string]any
	done := goCall(c, cctx, "x/ask", nil, &res, acprpc.WaitAfterCancel(time.Minute))
	req := p.ExpectRequest(ctx, "x/ask")
	cancel()
	p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
	p.Respond(string(req.ID), `{"outcome":{"outcome":"cancelled"}}`)
	require.NoError(t, wiretest.Recv(t, ctx, done))
	assert.Equal(t, map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, res)
}

// An error answer is a *CallError wrapping the peer's *Error, code, message
// and data intact; only -32800 matches ErrCancelled.
func TestCallErrorAnswer(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, nil, nil)
		done := goCall(c, ctx, "x/read", nil, nil)
		req := p.ExpectRequest(ctx, "x/read")
		p.Send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32002,"message":"Resource not found","data":{"path":"/x"}}}`)
		err := wiretest.Recv(t, ctx, done)
		var ce *acprpc.CallError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "x/read", ce.Method)
		assert.Equal(t, string(req.ID), ce.ID.String())
		var rpcErr *acprpc.Error
		require.ErrorAs(t, err, &rpcErr)
		assert.EqualValues(t, -32002, rpcErr.Code)
		assert.Equal(t, "Resource not found", rpcErr.Message)
		assert.JSONEq(t, `{"path":"/x"}`, string(rpcErr.Data))
		assert.NotErrorIs(t, err, acprpc.ErrCancelled)
		assert.NotErrorIs(t, err, acprpc.ErrConnClosed)
		assert.Contains(t, err.Error(), "Resource not found")

		done = goCall(c, ctx, "x/cancelled", nil, nil)
		req = p.ExpectRequest(ctx, "x/cancelled")
		p.RespondError(string(req.ID), acprpc.CodeRequestCancelled, "Request cancelled")
		err = wiretest.Recv(t, ctx, done)
		assert.ErrorIs(t, err, acprpc.ErrCancelled)
		require.ErrorAs(t, err, &rpcErr)
		assert.EqualValues(t, acprpc.CodeRequestCancelled, rpcErr.Code)

		var out struct{ N int }
		done = goCall(c, ctx, "x/badresult", nil, &out)
		req = p.ExpectRequest(ctx, "x/badresult")
		p.Respond(string(req.ID), `"not an object"`)
		err = wiretest.Recv(t, ctx, done)
		require.Error(t, err)
		assert.False(t, errors.As(err, &rpcErr))
	})
}

// A peer that has stopped reading blocks nobody: a Call whose context
// ends returns even though neither its request nor its cancel can be
// written, and so does Close.
func TestCallPeerStoppedReading(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, _ := wiretest.Connect(t, tr, nil, nil) // the peer never reads
		big := strings.Repeat("x", 1<<20)
		require.NoError(t, c.Notify(ctx, "x/jam", map[string]string{"pad": big}))
		cctx, cancel := context.WithCancel(ctx)
		done := goCall(c, cctx, "x/stuck", map[string]string{"pad": big}, nil)
		cancel()
		err := wiretest.Recv(t, ctx, done)
		assert.ErrorIs(t, err, acprpc.ErrCancelled)
		assert.ErrorIs(t, err, context.Canceled)

		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		assert.NoError(t, wiretest.Recv(t, ctx, closed))
	})
}

// A response reaches its caller only after every notification that arrived
// before it has been handled, however slow the notification handler.
func TestCallAnswerAfterNotifications(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		release := make(chan struct{})
		var handled atomic.Int32
		c, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/note": func(_ context.Context, req *acprpc.Request) (any, error) {
				if strings.Contains(string(req.Params), `"last"`) {
					<-release
				}
				handled.Add(1)
				return nil, nil
			},
			"ping": wiretest.Ping,
		}, nil)
		var res struct{ Outcome string }
		var handledAtReturn int32
		done := make(chan error, 1)
		go func() {
			err := c.Call(ctx, "x/work", map[string]int{"n": 1}, &res)
			handledAtReturn = handled.Load()
			done <- err
		}()
		req := p.ExpectRequest(ctx, "x/work")
		p.Notify("x/note", `{"n":1}`)
		p.Notify("x/note", `{"n":2}`)
		p.Notify("x/note", `{"n":"last"}`)
		p.Respond(string(req.ID), `{"outcome":"done"}`)
		p.Request("1", "ping", "") // once answered, the response has been read
		p.ExpectResult(ctx, "1", `"pong"`)
		select {
		case err := <-done:
			t.Fatalf("the answer overtook a notification: %v", err)
		default:
		}
		close(release)
		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.EqualValues(t, 3, handledAtReturn)
		assert.Equal(t, "done", res.Outcome)
	})
}

// An answer that waits behind a notification still being handled when the
// caller's context ends returns the context's error, not the answer alone:
// the answer reaches its caller only after the notifications before it.
// The answer travels with the error (an error answer inside it, a result
// decoded into result), and no $/cancel_request goes out for a call the
// peer has answered.
func TestCallAnswerBehindNotificationWhenContextEnds(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		code         int64
	}{
		{"result", `{"outcome":"done"}`, 0},
		{"error", "", -32000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			release, handling := make(chan struct{}), make(chan struct{})
			c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{
				"x/note": func(context.Context, *acprpc.Request) (any, error) {
					close(handling)
					<-release
					return nil, nil
				},
				"ping": wiretest.Ping,
			}, nil)
			defer close(release)
			callCtx, cancel := context.WithCancel(ctx)
			var res struct{ Outcome string }
			done := goCall(c, callCtx, "x/work", map[string]int{"n": 1}, &res)
			req := p.ExpectRequest(ctx, "x/work")
			p.Notify("x/note", `{}`)
			if tc.code == 0 {
				p.Respond(string(req.ID), tc.answer)
			} else {
				p.RespondError(string(req.ID), tc.code, "refused")
			}
			p.Request("1", "ping", "") // once answered, the call's answer has been read
			p.ExpectResult(ctx, "1", `"pong"`)
			wiretest.Recv(t, ctx, handling)
			cancel()
			err := wiretest.Recv(t, ctx, done)
			assertCancelledCall(t, err, context.Canceled, "x/work", string(req.ID))
			if tc.code == 0 {
				assert.Equal(t, "done", res.Outcome, "the answer travels with the error")
			} else {
				var rpcErr *acprpc.Error
				require.ErrorAs(t, err, &rpcErr)
				assert.EqualValues(t, tc.code, rpcErr.Code)
			}
			expectQuiet(t, ctx, p, "2") // no $/cancel_request
		})
	}
}

// Cancellation cascades through contexts across three hops: A calls B, B's
// handler calls C with its own context; cancelling A's call cancels C's
// handler, and each hop sends its own $/cancel_request with its own ID.
func TestCallCascadeThreeHops(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		cStarted := make(chan struct{})
		cCause := make(chan error, 1)
		bCause := make(chan error, 1)
		bCallErr := make(chan error, 1)
		hC := wiretest.Mux{
			"ping": wiretest.Ping,
			"c/deep": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				close(cStarted)
				<-ctx.Done()
				cCause <- context.Cause(ctx)
				return nil, ctx.Err()
			},
		}
		var bc *wiretest.Wire
		hB := wiretest.Mux{
			"b/work": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				// Some calls first, so B's ID for C differs from A's for B.
				for range 2 {
					if err := bc.A.Call(ctx, "ping", nil, nil); err != nil {
						return nil, err
					}
				}
				err := bc.A.Call(ctx, "c/deep", nil, nil)
				bCallErr <- err
				bCause <- context.Cause(ctx)
				return nil, err
			},
		}
		bc = wiretest.NewWire(t, wiretest.Side{}, wiretest.Side{Handler: hC}, wiretest.With{Relay: tr})
		ab := wiretest.NewWire(t, wiretest.Side{}, wiretest.Side{Handler: hB}, wiretest.With{Relay: tr})

		actx, cancel := context.WithCancel(ctx)
		done := goCall(ab.A, actx, "b/work", nil, nil, acprpc.WaitAfterCancel(time.Minute))
		wiretest.Recv(t, ctx, (<-chan struct{})(cStarted))
		cancel()

		err := wiretest.Recv(t, ctx, done)
		assert.ErrorIs(t, err, acprpc.ErrCancelled)
		assert.ErrorIs(t, err, context.Canceled)
		var rpcErr *acprpc.Error
		require.ErrorAs(t, err, &rpcErr, "A waited for B's answer")
		assert.EqualValues(t, acprpc.CodeRequestCancelled, rpcErr.Code)

		assert.ErrorIs(t, wiretest.Recv(t, ctx, cCause), acprpc.ErrPeerCancelled)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, bCause), acprpc.ErrPeerCancelled)
		bErr := wiretest.Recv(t, ctx, bCallErr)
		assert.ErrorIs(t, bErr, acprpc.ErrCancelled)
		assert.ErrorIs(t, bErr, context.Canceled)

		work := ab.Await(ctx, wiretest.AtoB, func(m wiretest.Msg) bool { return m.IsRequestOf("b/work") })
		deep := bc.Await(ctx, wiretest.AtoB, func(m wiretest.Msg) bool { return m.IsRequestOf("c/deep") })
		assert.Equal(t, "1", string(work.ID))
		assert.Equal(t, "3", string(deep.ID))
		ab.Await(ctx, wiretest.AtoB, func(m wiretest.Msg) bool { return m.IsCancelOf(string(work.ID)) })
		bc.Await(ctx, wiretest.AtoB, func(m wiretest.Msg) bool { return m.IsCancelOf(string(deep.ID)) })
		assert.Equal(t, 1, ab.Count(wiretest.AtoB, func(m wiretest.Msg) bool { return m.Method == acprpc.MethodCancelRequest }))
		assert.Equal(t, 1, bc.Count(wiretest.AtoB, func(m wiretest.Msg) bool { return m.Method == acprpc.MethodCancelRequest }))
		deepAnswer := bc.Await(ctx, wiretest.BtoA, func(m wiretest.Msg) bool { return m.IsAnswerTo(string(deep.ID)) })
		assert.EqualValues(t, acprpc.CodeRequestCancelled, deepAnswer.Code())
		workAnswer := ab.Await(ctx, wiretest.BtoA, func(m wiretest.Msg) bool { return m.IsAnswerTo(string(work.ID)) })
		assert.EqualValues(t, acprpc.CodeRequestCancelled, workAnswer.Code())

		assert.EqualValues(t, 1, ab.A.Stats().CancelsSent)
		assert.EqualValues(t, 1, ab.B.Stats().CancelsReceived)
		assert.EqualValues(t, 1, bc.A.Stats().CancelsSent)
		assert.EqualValues(t, 1, bc.B.Stats().CancelsReceived)
	})
}

// Notify sends one notification line with the params as encoded.
func TestCallNotify(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[1], nil, nil)
	require.NoError(t, c.Notify(ctx, "x/note", json.RawMessage(`{"n":1,"update":{"a":"<b>"}}`)))
	m := p.ExpectNotification(ctx, "x/note")
	assert.Equal(t, `{"jsonrpc":"2.0","method":"x/note","params":{"n":1,"update":{"a":"<b>"}}}`, m.Raw)
	require.NoError(t, c.Notify(ctx, "x/none", nil))
	m = p.ExpectNotification(ctx, "x/none")
	assert.Equal(t, `{"jsonrpc":"2.0","method":"x/none"}`, m.Raw)
}

// A notification handler may call the peer: the answer does not wait for
// that notification, nor for those queued behind it (which cannot run
// before it returns), but still for those before it.
func TestCallFromNotificationHandler(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		results := make(chan string, 2)
		var order []string
		c, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/first": func(context.Context, *acprpc.Request) (any, error) {
				order = append(order, "first")
				return nil, nil
			},
			"x/stop": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				var out string
				cctx, cancel := context.WithTimeout(ctx, time.Minute) // a derived context still counts
				defer cancel()
				err := acprpc.ConnFromContext(cctx).Call(cctx, "x/kill", nil, &out)
				if err != nil {
					out = err.Error()
				}
				order = append(order, "stop")
				results <- out
				return nil, nil
			},
			"x/after": func(context.Context, *acprpc.Request) (any, error) {
				order = append(order, "after")
				results <- "after"
				return nil, nil
			},
		}, nil)
		p.Notify("x/first", "")
		p.Notify("x/stop", "")
		req := p.ExpectRequest(ctx, "x/kill")
		p.Notify("x/after", "")
		p.Respond(string(req.ID), `"killed"`)
		assert.Equal(t, "killed", wiretest.Recv(t, ctx, results))
		assert.Equal(t, "after", wiretest.Recv(t, ctx, results))
		assert.Equal(t, []string{"first", "stop", "after"}, order)
		require.NoError(t, c.Close())
	})
}

// Response tests: what the peer's answers to our calls may look like, and
// that none of them is ever answered.

// respCall is one of our calls to a scripted peer, as the peer saw it.
type respCall struct {
	id     string // its ID's JSON text
	result chan respOutcome
}

type respOutcome struct {
	value any
	err   error
}

// respStart makes a call and returns it once the peer has read it.
func respStart(ctx context.Context, t *testing.T, c *acprpc.Conn, p *wiretest.Peer) respCall {
	t.Helper()
	rc := respCall{result: make(chan respOutcome, 1)}
	go func() {
		var v any
		err := c.Call(ctx, "peer/answer", nil, &v)
		rc.result <- respOutcome{v, err}
	}()
	rc.id = string(p.ExpectRequest(ctx, "peer/answer").ID)
	return rc
}

// A response is never answered, whatever is wrong with it: one whose
// "jsonrpc" is not "2.0", or that has both a result and an error, fails the
// call it names with a clear error instead, and one that names no call of
// ours is only logged. Peers that write every member send "method":null,
// "error":null or "result":null beside the member that counts: those are
// ordinary answers.
func TestResponsesNeverAnswered(t *testing.T) {
	type want struct {
		value any    // the result, on success
		code  int64  // the error's code, on failure
		text  string // in the error's message
	}
	cases := []struct {
		name string
		line func(id string) string
		want want
	}{
		{"error null beside a result", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":"ok","error":null}`
		}, want{value: "ok"}},
		{"result null beside an error", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":null,"error":{"code":-32001,"message":"nope"}}`
		}, want{code: -32001, text: "nope"}},
		{"method null", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"method":null,"result":"ok"}`
		}, want{value: "ok"}},
		{"every member, result null", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"method":null,"params":null,"result":null,"error":null}`
		}, want{value: nil}},
		{"jsonrpc 1.0", func(id string) string {
			return `{"jsonrpc":"1.0","id":` + id + `,"result":"ok"}`
		}, want{code: acprpc.CodeInternalError, text: `invalid response: "jsonrpc" must be "2.0"`}},
		{"jsonrpc not a string", func(id string) string {
			return `{"jsonrpc":2,"id":` + id + `,"error":{"code":1,"message":"x"}}`
		}, want{code: acprpc.CodeInternalError, text: `invalid response`}},
		{"both a result and an error", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":"ok","error":{"code":-32001,"message":"nope"}}`
		}, want{code: acprpc.CodeInternalError, text: "invalid response: it has both a result and an error"}},
		{"a null error alone", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"error":null}`
		}, want{code: acprpc.CodeInternalError, text: "invalid response"}},
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"x/ping": wiretest.Ping}, nil)
		for i, tc := range cases {
			rc := respStart(ctx, t, c, p)
			p.Send(tc.line(rc.id))
			out := wiretest.Recv(t, ctx, rc.result)
			if tc.want.text == "" {
				assert.NoError(t, out.err, tc.name)
				assert.Equal(t, tc.want.value, out.value, tc.name)
			} else {
				var rpcErr *acprpc.Error
				if assert.ErrorAs(t, out.err, &rpcErr, tc.name) {
					assert.Equal(t, tc.want.code, rpcErr.Code, tc.name)
					assert.Contains(t, rpcErr.Message, tc.want.text, tc.name)
				}
				assert.NotErrorIs(t, out.err, acprpc.ErrConnClosed, tc.name)
			}
			// Nothing was written for the response: the next line is the
			// ping's answer.
			id := `"ping-` + string(rune('a'+i)) + `"`
			p.Request(id, "x/ping", "")
			p.ExpectResult(ctx, id, `"pong"`)
		}
		// Invalid responses that name no call of ours, or none at all.
		for _, line := range []string{
			`{"jsonrpc":"1.0","id":999,"result":"ok"}`,
			`{"jsonrpc":"1.0","id":"theirs","result":"ok"}`,
			`{"jsonrpc":"2.0","id":998,"method":null,"error":{"code":1,"message":"x"}}`,
			`{"jsonrpc":"2.0","id":null,"result":"ok","error":{"code":1,"message":"x"}}`,
			`{"jsonrpc":"1.0","result":"ok"}`,
		} {
			p.Send(line)
		}
		p.Request("0", "x/ping", "")
		p.ExpectResult(ctx, "0", `"pong"`)
		require.NoError(t, c.Err())
		assert.Zero(t, c.Stats().OutgoingInFlight)
	})
}

// A peer that never answers cancelled calls fills MaxOutgoing with them; a
// call made with ReleaseOnCancel gives its place up once it returns on its
// cancel, and its late answer is still known as a late answer (logged so,
// never taken for another call's) for the last MaxOutgoing calls released.
func TestReleaseOnCancelFreesThePlaceOfACallThePeerNeverAnswers(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"ping": wiretest.Ping},
		&acprpc.Options{MaxOutgoing: 2, Logger: log.Logger()})
	cancelOne := func(id string, opts ...acprpc.CallOption) {
		t.Helper()
		callCtx, cancel := context.WithCancel(ctx)
		done := goCall(c, callCtx, "peer/ignores-cancels", nil, nil, opts...)
		p.ExpectRequest(ctx, "peer/ignores-cancels")
		cancel()
		assertCancelledCall(t, wiretest.Recv(t, ctx, done), context.Canceled, "peer/ignores-cancels", id)
		p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
	}

	cancelOne("1")
	cancelOne("2", acprpc.ReleaseOnCancel())
	cancelOne("3", acprpc.ReleaseOnCancel())
	cancelOne("4", acprpc.ReleaseOnCancel()) // the third released: call 2 is forgotten
	assert.Equal(t, 1, c.Stats().OutgoingInFlight, "only the call made without the option holds its place")

	var got string
	done := goCall(c, ctx, "peer/answers", nil, &got)
	p.ExpectRequest(ctx, "peer/answers")
	err := c.Call(ctx, "peer/over", nil, nil)
	require.ErrorIs(t, err, acprpc.ErrTooManyCalls, "calls 1 and 5 fill MaxOutgoing")

	p.Respond("2", `"forgotten"`)
	p.Respond("3", `"late"`)
	p.Respond("5", `"five"`)
	require.NoError(t, wiretest.Recv(t, ctx, done))
	assert.Equal(t, "five", got)
	p.Respond("4", `"late"`)
	p.Respond("1", `"late"`)
	expectQuiet(t, ctx, p, "9")
	assert.Equal(t, 0, c.Stats().OutgoingInFlight)

	var late, unknown []string
	for _, r := range log.Logged() {
		switch {
		case strings.Contains(r.Message, "late answer"):
			late = append(late, r.Attrs["id"])
		case strings.Contains(r.Message, "no pending call"):
			unknown = append(unknown, r.Attrs["id"])
		}
	}
	assert.Equal(t, []string{"3", "4"}, late)
	assert.Equal(t, []string{"2"}, unknown)
	require.NoError(t, c.Close())
	assert.Empty(t, p.Rest(ctx), "a late answer was answered")
}

// assertNotSent checks that a refused Call or Notify sent nothing: the next
// line the peer reads is the marker notification sent after it.
func assertNotSent(t *testing.T, ctx context.Context, c *acprpc.Conn, p *wiretest.Peer) {
	t.Helper()
	require.NoError(t, c.Notify(ctx, "_marker", nil))
	p.ExpectNotification(ctx, "_marker")
}

// A Call given a result it could not decode an answer into is refused
// before anything is sent, saying what to pass, not after the whole turn
// with json.Unmarshal's words.
func TestCallRefusesAResultItCannotDecodeInto(t *testing.T) {
	var nilPointer *map[string]any
	for _, tc := range []struct {
		name   string
		result any
		says   string
	}{
		{"a struct", struct{ Outcome string }{}, "the result is a struct { Outcome string }, not a pointer"},
		{"a map", map[string]any{}, "the result is a map[string]interface {}, not a pointer"},
		{"a nil pointer", nilPointer, "the result is a nil *map[string]interface {}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
			err := c.Call(ctx, "x/turn", map[string]int{"n": 1}, tc.result)
			require.Error(t, err)
			assert.Equal(t, "acprpc: x/turn: not sent: "+tc.says+
				", which an answer cannot be decoded into: pass a pointer (&result), or nil to ignore the result", err.Error())
			var ce *acprpc.CallError
			require.ErrorAs(t, err, &ce)
			assert.True(t, ce.ID.IsZero(), "a call never sent has no ID")
			assertNotSent(t, ctx, c, p)
		})
	}
}

// Params that encode to neither an object nor an array, which JSON-RPC
// does not allow, are refused before anything is sent, by Call and Notify
// alike, naming what they encode to.
func TestParamsThatAreNotAnObjectOrArrayAreRefused(t *testing.T) {
	var nilParams *struct{ N int }
	for _, tc := range []struct {
		params any
		kind   string
	}{
		{"hello", "a string"},
		{42, "a number"},
		{true, "a boolean"},
		{nilParams, "null"},
		{json.RawMessage(`"raw"`), "a string"},
	} {
		t.Run(fmt.Sprintf("%T", tc.params), func(t *testing.T) {
			ctx := wiretest.Context(t)
			c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
			// %T: json.RawMessage is an alias of another name from Go 1.27 on.
			want := fmt.Sprintf(": not sent: the params (%T) encode to %s, and JSON-RPC's params are an object or an array: "+
				"pass a struct, a map or a slice, or nil for none", tc.params, tc.kind)
			err := c.Call(ctx, "_my/method", tc.params, nil)
			require.Error(t, err)
			assert.Equal(t, "acprpc: _my/method"+want, err.Error())
			err = c.Notify(ctx, "_my/note", tc.params)
			require.Error(t, err)
			assert.Equal(t, "acprpc: _my/note"+want, err.Error())
			assertNotSent(t, ctx, c, p)
		})
	}
}

// A Notify refused because its context is done says how to send after a
// cancel, which is what an agent's last updates of a cancelled turn need;
// the way it names then sends.
func TestNotifyOnACancelledContextSaysHowToSendAfterACancel(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	turn, cancel := context.WithCancel(ctx)
	cancel()
	err := c.Notify(turn, "x/note", map[string]int{"n": 1})
	require.Error(t, err)
	assert.Equal(t, "acprpc: x/note: not sent: its context is done (context canceled); to send after a cancel, "+
		"as a cancelled turn's last session/update, pass context.WithoutCancel(ctx)", err.Error())
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, c.Notify(context.WithoutCancel(turn), "x/note", map[string]int{"n": 1}))
	p.ExpectNotification(ctx, "x/note")
}
