package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// The handler sees its request, untouched, in its arguments and its context,
// and the answer carries its result and the request's ID.
func TestConnAnswersWithResultAndExposesRequest(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		params := `{"z":1,"a":"<b>&","sessionId":"s9"}` // key order and HTML kept
		seen := make(chan *acprpc.Request, 1)
		var conn *acprpc.Conn
		connSeen := make(chan *acprpc.Conn, 1)
		c, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			fromCtx, ok := acprpc.RequestFromContext(ctx)
			if !ok || fromCtx != req {
				return nil, errors.New("RequestFromContext does not give the request")
			}
			seen <- req
			connSeen <- acprpc.ConnFromContext(ctx)
			return req.Params, nil
		}), nil)
		conn = c
		p.Request("7", "x/echo", params)
		m := p.ExpectResult(ctx, "7", params)
		assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":`+params+`}`, m.Raw)
		req := <-seen
		assert.Equal(t, "7", req.ID.String())
		assert.False(t, req.ID.IsString())
		assert.False(t, req.IsNotification())
		assert.Equal(t, "x/echo", req.Method)
		assert.Equal(t, params, string(req.Params))
		assert.Equal(t, "s9", req.SessionID)
		assert.Same(t, conn, <-connSeen)
	})
}

// A notification's handler sees its request too, with no ID.
func TestConnNotificationRequestFromContext(t *testing.T) {
	ctx := wiretest.Context(t)
	got := make(chan *acprpc.Request, 1)
	_, p := wiretest.Connect(t, wiretest.Transports[0], acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		r, ok := acprpc.RequestFromContext(ctx)
		if ok && r == req {
			got <- req
		}
		return nil, nil
	}), nil)
	p.Notify("x/note", `[1,2]`)
	var req *acprpc.Request
	select {
	case req = <-got:
	case <-ctx.Done():
		t.Fatal("notification not handled")
	}
	assert.True(t, req.IsNotification())
	assert.True(t, req.ID.IsZero())
	assert.Equal(t, "x/note", req.Method)
	assert.Equal(t, `[1,2]`, string(req.Params))
}

// An error that carries an *acprpc.Error keeps its code, message and data;
// any other error becomes -32603 with its message; no answer ever has code 0.
func TestConnErrorAnswers(t *testing.T) {
	data := json.RawMessage(`{"hint":"log in"}`)
	cases := []struct {
		name    string
		err     error
		code    int64
		message string
		data    string
	}{
		{"rpc error", &acprpc.Error{Code: -32000, Message: "Authentication required", Data: data}, -32000, "Authentication required", string(data)},
		{"wrapped rpc error", fmt.Errorf("loading: %w", &acprpc.Error{Code: -32002, Message: "Resource not found", Data: data}), -32002, "Resource not found", string(data)},
		{"invalid params", acprpc.NewError(acprpc.CodeInvalidParams, "Invalid params: no"), -32602, "Invalid params: no", ""},
		{"plain error", errors.New("disk on fire"), -32603, "disk on fire", ""},
		{"code zero", &acprpc.Error{Code: 0, Message: "zero"}, -32603, "jsonrpc error 0: zero", ""},
		{"cancelled code", acprpc.NewError(acprpc.CodeRequestCancelled, "Request cancelled"), -32800, "Request cancelled", ""},
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		_, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
			n, _ := strconv.Atoi(req.ID.String())
			return nil, cases[n].err
		}), nil)
		for i, tc := range cases {
			id := strconv.Itoa(i)
			p.Request(id, "x/fail", "")
			m := p.ExpectError(ctx, id, tc.code)
			assert.Equal(t, tc.message, m.Error.Message, tc.name)
			if tc.data == "" {
				assert.Nil(t, m.Error.Data, tc.name)
			} else {
				assert.JSONEq(t, tc.data, string(m.Error.Data), tc.name)
			}
		}
	})
}

// A result that cannot be encoded is an internal error, not a broken line.
func TestConnUnencodableResult(t *testing.T) {
	ctx := wiretest.Context(t)
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{
		"bad":  func(context.Context, *acprpc.Request) (any, error) { return make(chan int), nil },
		"ping": wiretest.Ping,
	}, nil)
	p.Request("1", "bad", "")
	p.ExpectError(ctx, "1", acprpc.CodeInternalError)
	p.Request("2", "ping", "")
	p.ExpectResult(ctx, "2", `"pong"`)
}

// A panicking handler answers -32603, is logged with its stack, and the
// connection goes on; so does a panicking notification handler.
func TestConnPanic(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		log := &wiretest.Recorder{}
		logger := log.Logger()
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"boom":      func(context.Context, *acprpc.Request) (any, error) { panic("kaboom") },
			"note/boom": func(context.Context, *acprpc.Request) (any, error) { panic("note kaboom") },
			"ping":      wiretest.Ping,
		}, &acprpc.Options{Logger: logger})
		p.Request(`"p"`, "boom", "")
		m := p.ExpectError(ctx, `"p"`, acprpc.CodeInternalError)
		assert.Contains(t, m.Error.Message, "kaboom")
		rec, ok := log.FindLogged(slog.LevelError, "panic")
		require.True(t, ok, "the panic is logged")
		assert.Contains(t, rec.Attrs["stack"], "goroutine")

		p.Notify("note/boom", "")
		p.Request("2", "ping", "")
		p.ExpectResult(ctx, "2", `"pong"`)
		p.Request("3", "boom", "")
		p.ExpectError(ctx, "3", acprpc.CodeInternalError)
		p.Request("4", "ping", "")
		p.ExpectResult(ctx, "4", `"pong"`)
	})
}

// Unknown methods get -32601; so does any request for a $/ method, which
// never reaches the handler; a Conn without a handler answers -32601 to all.
func TestConnMethodNotFound(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var dollar atomic.Int32
		_, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
			if req.Method[0] == '$' {
				dollar.Add(1)
				return "handled", nil
			}
			return nil, acprpc.MethodNotFound(req.Method)
		}), nil)
		p.Request("1", "no/such", "")
		m := p.ExpectError(ctx, "1", acprpc.CodeMethodNotFound)
		assert.Contains(t, m.Error.Message, "no/such")
		p.Request("2", "$/cancel_request", `{"requestId":1}`)
		p.ExpectError(ctx, "2", acprpc.CodeMethodNotFound)
		p.Request("3", "$/whatever", "")
		p.ExpectError(ctx, "3", acprpc.CodeMethodNotFound)
		p.Request(`"4"`, "$/cancelRequest", `{"id":1}`)
		p.ExpectError(ctx, `"4"`, acprpc.CodeMethodNotFound)
		assert.Zero(t, dollar.Load(), "a $/ request reached the handler")

		_, nilPeer := wiretest.Connect(t, tr, nil, nil)
		nilPeer.Request("1", "x/work", `{"n":1}`)
		nilPeer.ExpectError(ctx, "1", acprpc.CodeMethodNotFound)
		nilPeer.Notify("x/note", `{}`)
		nilPeer.Request("2", "x", "")
		nilPeer.ExpectError(ctx, "2", acprpc.CodeMethodNotFound)
	})
}

// Unknown notifications, $/ ones included, are never answered.
func TestConnUnknownNotificationsIgnored(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"ping": wiretest.Ping}, nil)
		p.Notify("nobody/home", `{"a":1}`)
		p.Notify("$/progress", `{"token":1}`)
		p.Notify("failing/too", "")
		p.Request("1", "ping", "")
		p.ExpectResult(ctx, "1", `"pong"`)
		require.NoError(t, c.Close())
		assert.Empty(t, p.Rest(ctx))
	})
}

// Requests run concurrently: every handler waits until all have started.
func TestConnRequestsRunConcurrently(t *testing.T) {
	const n = 8
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var count atomic.Int32
		all := make(chan struct{})
		_, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			if count.Add(1) == n {
				close(all)
			}
			select {
			case <-all:
				return req.ID.String(), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}), nil)
		for i := range n {
			p.Request(strconv.Itoa(i), "x/barrier", "")
		}
		got := p.ExpectByID(ctx, n)
		for i := range n {
			id := strconv.Itoa(i)
			require.Contains(t, got, id)
			assert.Equal(t, strconv.Quote(id), string(got[id].Result))
		}
	})
}

// MaxConcurrentRequests bounds the running handlers; a request waiting for
// a slot can be cancelled without its handler ever running.
func TestConnMaxConcurrentRequests(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var running, peak atomic.Int32
		invoked := make(chan string, 8)
		release := make(chan struct{})
		_, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			now := running.Add(1)
			defer running.Add(-1)
			for {
				old := peak.Load()
				if now <= old || peak.CompareAndSwap(old, now) {
					break
				}
			}
			invoked <- req.ID.String()
			if req.Method == "x/quick" {
				return "quick", nil
			}
			<-release
			return "done", nil
		}), &acprpc.Options{MaxConcurrentRequests: 2, CancelGrace: -1})
		p.Request("1", "x/wait", "")
		p.Request("2", "x/wait", "")
		first := map[string]bool{wiretest.Recv(t, ctx, invoked): true, wiretest.Recv(t, ctx, invoked): true}
		assert.Equal(t, map[string]bool{"1": true, "2": true}, first)

		p.Request("3", "x/wait", "")
		p.Cancel("3")
		// With CancelGrace negative an answer only comes once the handler
		// returns, unless the request never got a slot.
		p.ExpectError(ctx, "3", acprpc.CodeRequestCancelled)
		select {
		case id := <-invoked:
			t.Fatalf("request %s ran beyond the limit", id)
		default:
		}

		close(release)
		got := p.ExpectByID(ctx, 2)
		assert.Contains(t, got, "1")
		assert.Contains(t, got, "2")
		p.Request("4", "x/quick", "")
		p.ExpectResult(ctx, "4", `"quick"`)
		assert.LessOrEqual(t, peak.Load(), int32(2))
	})
}

// Notifications are handled one at a time in arrival order; a slow one
// delays later notifications but not requests.
func TestConnNotificationsInOrder(t *testing.T) {
	const n = 50
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		release := make(chan struct{})
		finished := make(chan struct{})
		var mu sync.Mutex
		var order []int
		var running, overlap atomic.Int32
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/note": func(_ context.Context, req *acprpc.Request) (any, error) {
				if running.Add(1) > 1 {
					overlap.Add(1)
				}
				defer running.Add(-1)
				var params struct{ N int }
				if err := req.DecodeParams(&params); err != nil {
					return nil, err
				}
				if params.N == 0 {
					<-release
				}
				mu.Lock()
				order = append(order, params.N)
				if len(order) == n {
					close(finished)
				}
				mu.Unlock()
				return nil, nil
			},
			"ping": wiretest.Ping,
		}, nil)
		for i := range n {
			p.Notify("x/note", fmt.Sprintf(`{"n":%d}`, i))
		}
		p.Request("1", "ping", "")
		p.ExpectResult(ctx, "1", `"pong"`) // while the first notification is stuck
		mu.Lock()
		assert.Empty(t, order, "a notification ran while the first was stuck")
		mu.Unlock()
		close(release)
		wiretest.Recv(t, ctx, finished)
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		mu.Lock()
		assert.Equal(t, want, order)
		mu.Unlock()
		assert.Zero(t, overlap.Load(), "notifications overlapped")
	})
}

// HandlerTimeout cancels a request with cause ErrDeadline, which is also
// context.DeadlineExceeded, and the answer is -32800, or the marker.
func TestConnHandlerTimeout(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		causes := make(chan error, 2)
		_, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(ctx context.Context, _ *acprpc.Request) (any, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		}), withTurnMarker(acprpc.Options{HandlerTimeout: 20 * time.Millisecond}))
		p.Request("1", "x/slow", "")
		m := p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
		assert.Equal(t, "Request cancelled", m.Error.Message)
		cause := wiretest.Recv(t, ctx, causes)
		assert.ErrorIs(t, cause, acprpc.ErrDeadline)
		assert.ErrorIs(t, cause, context.DeadlineExceeded)
		assert.NotErrorIs(t, cause, acprpc.ErrPeerCancelled)

		p.Request("2", "x/turn", "")
		p.ExpectResult(ctx, "2", string(turnMarker))
		assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrDeadline)
	})
}

// A handler that finishes within HandlerTimeout is not disturbed by it.
func TestConnHandlerTimeoutNotReached(t *testing.T) {
	ctx := wiretest.Context(t)
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"ping": wiretest.Ping},
		&acprpc.Options{HandlerTimeout: time.Minute})
	p.Request("1", "ping", "")
	p.ExpectResult(ctx, "1", `"pong"`)
}

// Options.HandlerContext gives each handler, request or notification, a
// context of the SDK's own making: its values reach the handler, the
// library's accessors and cancellation work through it, and the answer's
// Sent hook sees it.
func TestHandlerContext(t *testing.T) {
	ctx := wiretest.Context(t)
	seen := make(chan string, 8)
	sentUnder := make(chan string, 8)
	opts := &acprpc.Options{
		HandlerContext: func(ctx context.Context, req *acprpc.Request) context.Context {
			return context.WithValue(ctx, traceKey{}, fmt.Sprintf("%s#%s %s", req.Method, req.ID, req.Params))
		},
		Hooks: acprpc.Hooks{Sent: func(ctx context.Context, m *acprpc.Message) {
			if m.Kind == acprpc.KindResult || m.Kind == acprpc.KindError {
				trace, _ := ctx.Value(traceKey{}).(string)
				sentUnder <- trace
			}
		}},
	}
	h := wiretest.Mux{
		"x/hold": func(ctx context.Context, req *acprpc.Request) (any, error) {
			seen <- ctx.Value(traceKey{}).(string)
			r, ok := acprpc.RequestFromContext(ctx)
			assert.True(t, ok && r == req, "RequestFromContext through the derived context")
			assert.NotNil(t, acprpc.ConnFromContext(ctx), "ConnFromContext through the derived context")
			<-ctx.Done()
			seen <- context.Cause(ctx).Error()
			return nil, context.Cause(ctx)
		},
		"note": func(ctx context.Context, req *acprpc.Request) (any, error) {
			seen <- ctx.Value(traceKey{}).(string)
			return nil, nil
		},
	}
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, opts)
	p.Request("7", "x/hold", `{"n":1}`)
	assert.Equal(t, `x/hold#7 {"n":1}`, wiretest.Recv(t, ctx, seen))
	p.Cancel("7")
	assert.Equal(t, acprpc.ErrPeerCancelled.Error(), wiretest.Recv(t, ctx, seen), "the peer's cancel reaches the derived context")
	p.ExpectError(ctx, "7", acprpc.CodeRequestCancelled)
	assert.Equal(t, `x/hold#7 {"n":1}`, wiretest.Recv(t, ctx, sentUnder), "the answer is sent under the handler's context")
	p.Notify("note", `[1]`)
	assert.Equal(t, `note# [1]`, wiretest.Recv(t, ctx, seen))
}

// A HandlerContext that does not derive from the request's context is
// ignored with an error logged, so the handler never loses its cancel; a
// nil one keeps the request's context.
func TestHandlerContextMustDerive(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	logger := log.Logger()
	var stranger atomic.Bool
	stranger.Store(true)
	opts := &acprpc.Options{Logger: logger, HandlerContext: func(context.Context, *acprpc.Request) context.Context {
		if stranger.Load() {
			return context.Background()
		}
		return nil
	}}
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"block": wiretest.Hold(nil)}, opts)
	p.Request("1", "block", `{}`)
	p.Cancel("1")
	p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
	_, found := log.FindLogged(slog.LevelError, "does not derive")
	assert.True(t, found)
	stranger.Store(false)
	p.Request("2", "block", `{}`)
	p.Cancel("2")
	p.ExpectError(ctx, "2", acprpc.CodeRequestCancelled)
}

type traceKey struct{}
