package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// A cancel written together with its request (one write, two lines) always
// finds it: the request is registered before anything after it is read.
func TestCancelInSameWrite(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var rec wiretest.Recorder
		_, p := wiretest.Connect(t, tr, wiretest.Mux{"x/wait": rec.Block}, &acprpc.Options{CancelGrace: -1})
		for i := range 50 {
			id := strconv.Itoa(i)
			if i%2 == 1 {
				id = strconv.Quote("s" + id)
			}
			p.SendRaw(wiretest.RequestLine(id, "x/wait", "") + "\n" + wiretest.CancelLine(id) + "\n")
			m := p.ExpectError(ctx, id, acprpc.CodeRequestCancelled)
			assert.Equal(t, "Request cancelled", m.Error.Message)
			assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32800,"message":"Request cancelled"}}`, m.Raw)
			key, cause := rec.NextReturn(t, ctx)
			assert.Equal(t, id, key)
			assert.ErrorIs(t, cause, acprpc.ErrPeerCancelled)
			assert.NotErrorIs(t, cause, acprpc.ErrSessionCancelled)
			assert.NotErrorIs(t, cause, acprpc.ErrDeadline)
			assert.NotErrorIs(t, cause, acprpc.ErrConnClosed)
		}
	})
}

// A cancel may spell a string ID with other escapes: it is the same ID.
func TestCancelMatchesStringIDByValue(t *testing.T) {
	ctx := wiretest.Context(t)
	var rec wiretest.Recorder
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"x/wait": rec.Block}, nil)
	p.Request(`"xA"`, "x/wait", "")
	rec.NextStart(t, ctx)
	p.Cancel(`"x\u0041"`)
	m := p.ExpectError(ctx, `"xA"`, acprpc.CodeRequestCancelled)
	assert.Contains(t, m.Raw, `"id":"xA"`)
}

// A cancel for an ID not in flight (never seen, or of the other type) is
// ignored: no answer, and nothing in flight is touched.
func TestCancelUnknownID(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var held wiretest.Recorder
		release := make(chan struct{})
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"x/hold": held.Track(wiretest.Hold(release)), "ping": wiretest.Ping}, nil)
		p.Request("1", "x/hold", "")
		heldCtx := held.Context(held.NextStart(t, ctx))
		p.Cancel("42")
		p.Cancel(`"1"`)
		p.Cancel("-1")
		p.Request("2", "ping", "")
		p.ExpectResult(ctx, "2", `"pong"`)
		assert.NoError(t, heldCtx.Err())
		assert.EqualValues(t, 3, c.Stats().CancelsReceived)
		close(release)
		p.ExpectResult(ctx, "1", `"held"`)
		require.NoError(t, c.Close())
		assert.Empty(t, p.Rest(ctx))
	})
}

// A cancel after the answer was sent gets no second answer, even with a
// grace period that would fire at once.
func TestCancelAfterAnswer(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"ping": wiretest.Ping, "session/prompt": wiretest.Ping},
			&acprpc.Options{CancelGrace: time.Nanosecond})
		p.Request("1", "ping", "")
		p.ExpectResult(ctx, "1", `"pong"`)
		p.Request("2", "session/prompt", `{"sessionId":"s"}`)
		p.ExpectResult(ctx, "2", `"pong"`)
		p.Cancel("1")
		p.Cancel("2")
		p.Notify("session/cancel", `{"sessionId":"s"}`)
		p.Request("3", "ping", "")
		p.ExpectResult(ctx, "3", `"pong"`)
		require.NoError(t, c.Close())
		assert.Empty(t, p.Rest(ctx))
	})
}

// Cancelling twice is cancelling once: one answer, one cause.
func TestCancelDuplicate(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var rec wiretest.Recorder
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"x/wait": rec.Block, "ping": wiretest.Ping},
			&acprpc.Options{CancelGrace: -1})
		p.Request("1", "x/wait", "")
		rec.NextStart(t, ctx)
		p.Cancel("1")
		p.Cancel("1")
		p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
		_, cause := rec.NextReturn(t, ctx)
		assert.ErrorIs(t, cause, acprpc.ErrPeerCancelled)
		p.Cancel("1")
		p.Request("2", "ping", "")
		p.ExpectResult(ctx, "2", `"pong"`)
		require.NoError(t, c.Close())
		assert.Empty(t, p.Rest(ctx))
		assert.Len(t, rec.Returns(), 1, "one cause")
	})
}

// A cancel racing the handler's return (and the grace timer, set to fire at
// once) still gives exactly one answer per request.
func TestCancelRacingReturn(t *testing.T) {
	const n = 300
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		for _, grace := range []time.Duration{time.Nanosecond, -1} {
			c, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
				k, _ := strconv.Atoi(req.ID.String())
				switch k % 3 {
				case 0:
					return "result", nil
				case 1:
					return nil, errors.New("failed")
				}
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return "partial", nil
			}), &acprpc.Options{CancelGrace: grace})
			var batch strings.Builder
			for i := range n {
				id := strconv.Itoa(i)
				batch.WriteString(wiretest.RequestLine(id, "x/race", "") + "\n")
				if i%2 == 0 {
					batch.WriteString(wiretest.CancelLine(id) + "\n")
				}
			}
			// Cancels before, among and after the answers.
			half := strings.Index(batch.String(), wiretest.RequestLine(strconv.Itoa(n/2), "x/race", ""))
			p.SendRaw(batch.String()[:half])
			seen := map[string]int{}
			for i := range n {
				if i == n/4 {
					p.SendRaw(batch.String()[half:])
				}
				m := p.Expect(ctx)
				require.True(t, m.IsResponse(), m.Raw)
				seen[string(m.ID)]++
				k, _ := strconv.Atoi(string(m.ID))
				switch {
				case m.Error == nil:
					assert.NotEqual(t, 1, k%3, "an error became a result: %s", m.Raw)
				case m.Error.Code == acprpc.CodeRequestCancelled:
					assert.Zero(t, k%2, "an uncancelled request was answered cancelled: %s", m.Raw)
				default:
					assert.Equal(t, 1, k%3, m.Raw)
					assert.EqualValues(t, acprpc.CodeInternalError, m.Error.Code, m.Raw)
				}
			}
			for i := range n {
				p.Cancel(strconv.Itoa(i)) // all late now
			}
			require.NoError(t, c.Close())
			assert.Empty(t, p.Rest(ctx), "a second answer")
			assert.Len(t, seen, n)
			for id, k := range seen {
				assert.Equal(t, 1, k, "answers for id %s", id)
			}
		}
	})
}

// A handler that ignores its context does not hold the answer hostage: when
// CancelGrace runs out the request is answered (-32800, or its marker), its
// ID is free again, and the handler's later return is dropped.
func TestCancelGraceAnswersForStuckHandler(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		release := make(chan struct{})
		returned := make(chan string, 3)
		started := make(chan string, 3)
		c, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/stuck": func(_ context.Context, req *acprpc.Request) (any, error) {
				started <- req.ID.String()
				<-release // ignores its context
				defer func() { returned <- req.ID.String() }()
				return "late " + req.ID.String(), nil
			},
			"session/prompt": func(_ context.Context, req *acprpc.Request) (any, error) {
				started <- req.ID.String()
				<-release
				defer func() { returned <- req.ID.String() }()
				return map[string]string{"stopReason": "end_turn"}, nil
			},
			"session/request_permission": func(_ context.Context, req *acprpc.Request) (any, error) {
				started <- req.ID.String()
				<-release
				defer func() { returned <- req.ID.String() }()
				return nil, errors.New("too late")
			},
			"ping": wiretest.Ping,
		}, &acprpc.Options{CancelGrace: 20 * time.Millisecond})
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		p.Request("1", "x/stuck", "")
		p.Request("2", "session/prompt", `{"sessionId":"s","prompt":[]}`)
		p.Request("3", "session/request_permission", `{"sessionId":"s","toolCall":{}}`)
		for range 3 {
			wiretest.Recv(t, ctx, started)
		}
		p.Cancel("1")
		p.Cancel("2")
		p.Cancel("3")
		got := p.ExpectByID(ctx, 3)
		assert.EqualValues(t, acprpc.CodeRequestCancelled, got["1"].Code())
		assert.Equal(t, "Request cancelled", got["1"].Error.Message)
		assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(got["2"].Result))
		assert.JSONEq(t, `{"outcome":{"outcome":"cancelled"}}`, string(got["3"].Result))
		assert.Equal(t, 0, c.Stats().IncomingInFlight)

		// The ID is free while the old handler still runs.
		p.Request("1", "ping", "")
		p.ExpectResult(ctx, "1", `"pong"`)

		close(release)
		for range 3 {
			wiretest.Recv(t, ctx, returned)
		}
		p.Request("4", "ping", "")
		p.ExpectResult(ctx, "4", `"pong"`)
		require.NoError(t, c.Close())
		assert.Empty(t, p.Rest(ctx), "a late return was sent")
	})
}

// After a cancel the handler's own return decides: a result is sent as it
// is (partial data), an error becomes -32800 (or the method's marker),
// whatever its code.
func TestCancelHandlerReturnAfterCancel(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		started := make(chan struct{}, 8)
		wait := func(ctx context.Context) { started <- struct{}{}; <-ctx.Done() }
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/partial": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				wait(ctx)
				return map[string]any{"partial": true, "items": []int{1, 2}}, nil
			},
			"x/error": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				wait(ctx)
				return nil, fmt.Errorf("stopped: %w", context.Cause(ctx))
			},
			"x/rpcerror": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				wait(ctx)
				return nil, &acprpc.Error{Code: -32002, Message: "gone", Data: json.RawMessage(`1`)}
			},
			"session/prompt": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				wait(ctx)
				return nil, errors.New("model call aborted")
			},
		}, nil)
		for i, method := range []string{"x/partial", "x/error", "x/rpcerror", "session/prompt"} {
			id := strconv.Itoa(i + 1)
			p.Request(id, method, `{"sessionId":"s"}`)
			wiretest.Recv(t, ctx, started)
			p.Cancel(id)
		}
		got := p.ExpectByID(ctx, 4)
		assert.JSONEq(t, `{"partial":true,"items":[1,2]}`, string(got["1"].Result))
		for _, id := range []string{"2", "3"} {
			require.NotNil(t, got[id].Error, got[id].Raw)
			assert.EqualValues(t, acprpc.CodeRequestCancelled, got[id].Error.Code)
			assert.Equal(t, "Request cancelled", got[id].Error.Message)
			assert.Nil(t, got[id].Error.Data)
		}
		assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(got["4"].Result))
	})
}

// CancelMarkers replaces ACP's markers; an empty map means -32800 for all.
func TestCancelMarkersOption(t *testing.T) {
	ctx := wiretest.Context(t)
	h := acprpc.HandlerFunc(wiretest.Hold(nil))
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{
		CancelMarkers: map[string]json.RawMessage{"x/m": json.RawMessage(`{"cancelled":true}`)},
	})
	p.Request("1", "x/m", "")
	p.Cancel("1")
	p.ExpectResult(ctx, "1", `{"cancelled":true}`)
	p.Request("2", "session/prompt", `{"sessionId":"s"}`)
	p.Cancel("2")
	p.ExpectError(ctx, "2", acprpc.CodeRequestCancelled)

	_, p2 := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{CancelMarkers: map[string]json.RawMessage{}})
	p2.Request("1", "session/prompt", `{"sessionId":"s"}`)
	p2.Cancel("1")
	p2.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
	p2.Request("2", "session/request_permission", `{"sessionId":"s"}`)
	p2.Cancel("2")
	p2.ExpectError(ctx, "2", acprpc.CodeRequestCancelled)
}

// A cancel with malformed params is logged and ignored, never answered.
func TestCancelMalformedParams(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		log := &wiretest.Recorder{}
		logger := log.Logger()
		var held wiretest.Recorder
		release := make(chan struct{})
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"x/hold": held.Track(wiretest.Hold(release)), "ping": wiretest.Ping},
			&acprpc.Options{Logger: logger})
		p.Request("1", "x/hold", "")
		heldCtx := held.Context(held.NextStart(t, ctx))
		for _, params := range []string{"", `{}`, `[1]`, `{"requestId":1.5}`, `{"requestId":null}`,
			`{"requestId":true}`, `{"requestId":{"id":1}}`, `{"id":1}`, `{"requestId":1e-1}`, `{"requestId":1e19}`, `null`} {
			p.Notify(acprpc.MethodCancelRequest, params)
		}
		p.Request("2", "ping", "")
		p.ExpectResult(ctx, "2", `"pong"`)
		assert.NoError(t, heldCtx.Err())
		n := 0
		for _, r := range log.Logged() {
			if r.Level >= slog.LevelWarn && strings.Contains(r.Message, "malformed") {
				n++
			}
		}
		assert.Equal(t, 8, n, "the first 8 of the 11 logged: %v", log.Logged())
		assert.Zero(t, c.Stats().CancelsReceived)

		p.Send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"_meta":{"x":1},"requestId":1}}`)
		p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
		require.NoError(t, c.Close())
		assert.Empty(t, p.Rest(ctx))
	})
}

// A cancel is handled ahead of every queue: behind a notification handler
// that waits for the very cancel, and behind a request handler holding the
// only slot and waiting for it, it still arrives.
func TestCancelAheadOfQueues(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		xCancelled := make(chan struct{})
		slowDone := make(chan struct{}, 2)
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/target": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				<-ctx.Done()
				close(xCancelled)
				return nil, ctx.Err()
			},
			"x/slownote": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				select {
				case <-xCancelled:
				case <-ctx.Done():
				}
				slowDone <- struct{}{}
				return nil, nil
			},
		}, &acprpc.Options{CancelGrace: -1})
		p.Request(`"x"`, "x/target", "")
		p.Notify("x/slownote", "")
		p.Notify("x/slownote", "")
		p.Cancel(`"x"`)
		p.ExpectError(ctx, `"x"`, acprpc.CodeRequestCancelled)
		wiretest.Recv(t, ctx, slowDone)
		wiretest.Recv(t, ctx, slowDone)
	})
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		xCancelled := make(chan struct{})
		holding := make(chan struct{})
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/holder": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				close(holding)
				select {
				case <-xCancelled:
					return "saw the cancel", nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
			"x/target": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				return "ran", nil
			},
		}, &acprpc.Options{MaxConcurrentRequests: 1})
		p.Request(`"h"`, "x/holder", "")
		wiretest.Recv(t, ctx, (<-chan struct{})(holding))
		p.Request(`"x"`, "x/target", "")
		p.Cancel(`"x"`)
		p.ExpectError(ctx, `"x"`, acprpc.CodeRequestCancelled)
		close(xCancelled)
		p.ExpectResult(ctx, `"h"`, `"saw the cancel"`)
	})
}

// With AcceptLSPCancel, LSP's $/cancelRequest {"id":...} cancels too; by
// default it is an ordinary (unknown) notification and cancels nothing.
func TestCancelLSPSpelling(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var rec wiretest.Recorder
		var lspSeen atomic.Int32
		h := wiretest.Mux{
			"x/wait": rec.Block,
			"ping":   wiretest.Ping,
			acprpc.MethodLSPCancelRequest: func(context.Context, *acprpc.Request) (any, error) {
				lspSeen.Add(1)
				return nil, nil
			},
		}
		_, p := wiretest.Connect(t, tr, h, &acprpc.Options{AcceptLSPCancel: true})
		p.Request("1", "x/wait", "")
		rec.NextStart(t, ctx)
		p.Notify(acprpc.MethodLSPCancelRequest, `{"id":1}`)
		p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
		_, cause := rec.NextReturn(t, ctx)
		assert.ErrorIs(t, cause, acprpc.ErrPeerCancelled)
		p.Request(`"2"`, "x/wait", "")
		rec.NextStart(t, ctx)
		p.Cancel(`"2"`)
		p.ExpectError(ctx, `"2"`, acprpc.CodeRequestCancelled)
		rec.NextReturn(t, ctx)
		assert.Zero(t, lspSeen.Load(), "an honoured LSP cancel also reached the handler")

		c2, p2 := wiretest.Connect(t, tr, h, nil)
		p2.Request("1", "x/wait", "")
		rec.NextStart(t, ctx)
		p2.Notify(acprpc.MethodLSPCancelRequest, `{"id":1}`)
		p2.Request("2", "ping", "")
		p2.ExpectResult(ctx, "2", `"pong"`)
		assert.Equal(t, 1, c2.Stats().IncomingInFlight, "LSP cancel honoured without AcceptLSPCancel")
		assert.Len(t, rec.Returns(), 2, "the first two handlers' returns only")
		p2.Cancel("1")
		p2.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
	})
}

// The application cancels one incoming request: the handler's context ends
// with the application's cause, and the request is answered as cancelled,
// marker included. CancelRequest reports whether it cancelled anything.
func TestCancelRequest(t *testing.T) {
	ctx := wiretest.Context(t)
	a := newTurnAgent()
	c, p := wiretest.Connect(t, wiretest.Transports[0], a, withTurnMarker(acprpc.Options{}))
	p.Request("1", "x/turn", "")
	p.Request(`"x"`, "x/tool", "")
	wiretest.Recv(t, ctx, a.started)
	wiretest.Recv(t, ctx, a.started)

	assert.True(t, c.CancelRequest(acprpc.Int64ID(1), errBudget))
	assert.False(t, c.CancelRequest(acprpc.Int64ID(1), errBudget), "cancelled already")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, a.causes), errBudget)
	p.ExpectNotification(ctx, "x/note")
	p.ExpectResult(ctx, "1", string(turnMarker))

	assert.True(t, c.CancelRequest(acprpc.StringID("x"), nil))
	assert.ErrorIs(t, wiretest.Recv(t, ctx, a.causes), acprpc.ErrCancelled, "no cause means ErrCancelled")
	p.ExpectError(ctx, `"x"`, acprpc.CodeRequestCancelled)

	assert.False(t, c.CancelRequest(acprpc.Int64ID(1), errBudget), "answered")
	assert.False(t, c.CancelRequest(acprpc.Int64ID(42), errBudget), "never seen")
	assert.False(t, c.CancelRequest(acprpc.ID{}, errBudget), "no ID")
	assert.False(t, c.CancelRequest(acprpc.StringID("1"), errBudget), `"1" is not 1`)
}

// A handler says its request was cancelled by returning ErrCancelled, or a
// -32800 *Error, of its own: the answer is the method's marker or -32800.
// A nested call's cancellation is not that: it is -32603 (see
// errors_test.go).
func TestHandlerReturnsErrCancelled(t *testing.T) {
	ctx := wiretest.Context(t)
	var n atomic.Int32
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if n.Add(1)%2 == 1 {
			return nil, fmt.Errorf("%w: %w", acprpc.ErrCancelled, errBudget)
		}
		return nil, acprpc.NewError(acprpc.CodeRequestCancelled, "budget gone")
	})
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, nil)
	for i, tc := range []struct{ method, want string }{
		{"session/prompt", `{"stopReason":"cancelled"}`},
		{"session/prompt", `{"stopReason":"cancelled"}`},
		{"session/request_permission", `{"outcome":{"outcome":"cancelled"}}`},
		{"x/tool", ""},
	} {
		id := fmt.Sprint(i + 1)
		p.Request(id, tc.method, `{"sessionId":"s"}`)
		if tc.want == "" {
			m := p.ExpectError(ctx, id, acprpc.CodeRequestCancelled)
			assert.Equal(t, "Request cancelled", m.Error.Message, "ACP's wording, whatever the handler's was")
		} else {
			p.ExpectResult(ctx, id, tc.want)
		}
	}
}

// A handler that ignores its cancel is named when CancelGrace answers for
// it, with its method, its ID and how long it overran; its late return
// says how long that was in the end.
func TestCancelGraceWarnsOfStuckHandler(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	release := make(chan struct{})
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{
		"x/stuck": func(context.Context, *acprpc.Request) (any, error) {
			<-release // ignores its context
			return "late", nil
		},
	}, &acprpc.Options{CancelGrace: 20 * time.Millisecond, Logger: log.Logger()})
	p.Request("7", "x/stuck", "")
	p.Cancel("7")
	assert.EqualValues(t, acprpc.CodeRequestCancelled, p.ExpectByID(ctx, 1)["7"].Code())
	warning := log.AwaitLogged(t, ctx, slog.LevelWarn, "ignored its cancel") // logged once the answer is out
	assert.Equal(t, "acprpc: a handler ignored its cancel: it still runs after Options.CancelGrace, so its request was answered cancelled for it and its own answer will be dropped; return from the handler when its context ends", warning.Message)
	assert.Equal(t, map[string]string{"method": "x/stuck", "id": "7", "overran": "20ms"}, warning.Attrs)

	close(release)
	late := log.AwaitLogged(t, ctx, slog.LevelInfo, "has returned")
	assert.Equal(t, "acprpc: a handler that ignored its cancel has returned; its answer was dropped, as its request was answered cancelled when Options.CancelGrace ran out", late.Message)
	assert.Equal(t, "x/stuck", late.Attrs["method"])
	overran, err := time.ParseDuration(late.Attrs["overran"])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, overran, 20*time.Millisecond)
}
