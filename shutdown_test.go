package acprpc_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// closeWithin closes c on another goroutine and fails the test unless Close
// returns within d.
func closeWithin(t *testing.T, c *acprpc.Conn, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-ctx.Done():
		t.Fatalf("Close did not return within %v", d)
	}
}

// shutdownRig is a Conn with work in flight both ways: two requests and a
// notification whose handlers wait for their contexts, and two calls
// waiting for answers.
type shutdownRig struct {
	conn      *acprpc.Conn
	peer      *wiretest.Peer
	handlers  wiretest.Recorder
	callErrs  chan error
	cancelCtx context.CancelCauseFunc
}

func newShutdownRig(t *testing.T, tr wiretest.Transport) *shutdownRig {
	ctx := wiretest.Context(t)
	r := &shutdownRig{callErrs: make(chan error, 2)}
	wait := r.handlers.Block
	parent, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	r.cancelCtx = cancel
	r.conn, r.peer = wiretest.ConnectContext(parent, t, tr, wiretest.Mux{
		"x/wait": wait, "x/note": wait, "session/prompt": wait,
	}, nil)
	r.peer.Request("1", "x/wait", "")
	r.peer.Request("2", "session/prompt", `{"sessionId":"s"}`)
	r.peer.Notify("x/note", "")
	for range 3 {
		r.handlers.NextStart(t, ctx)
	}
	for range 2 {
		go func() { r.callErrs <- r.conn.Call(context.Background(), "peer/pending", nil, nil) }()
	}
	// Read what the Conn writes from here on, so it is never stuck.
	for range 2 {
		r.peer.ExpectRequest(ctx, "peer/pending")
	}
	return r
}

// check verifies the state of a closed connection.
func (r *shutdownRig) check(t *testing.T) {
	t.Helper()
	ctx := wiretest.Context(t)
	wiretest.Recv(t, ctx, r.conn.Done())
	assert.ErrorIs(t, r.conn.Err(), acprpc.ErrConnClosed)
	for range 3 {
		cause := r.handlers.NextReturn(t, ctx).Cause
		assert.ErrorIs(t, cause, acprpc.ErrConnClosed)
		assert.NotErrorIs(t, cause, acprpc.ErrPeerCancelled)
	}
	for range 2 {
		err := wiretest.Recv(t, ctx, r.callErrs)
		assert.ErrorIs(t, err, acprpc.ErrConnClosed)
		var ce *acprpc.CallError
		assert.ErrorAs(t, err, &ce)
	}
	closeWithin(t, r.conn, 5*time.Second)
	closeWithin(t, r.conn, 5*time.Second) // twice is fine
	err := r.conn.Call(ctx, "peer/after", nil, nil)
	assert.ErrorIs(t, err, acprpc.ErrConnClosed)
	assert.ErrorIs(t, r.conn.Notify(ctx, "peer/after", nil), acprpc.ErrConnClosed)
	assert.Zero(t, r.conn.Stats().OutgoingInFlight)
}

// Whatever closes the connection (Close, the peer's end of input, NewConn's
// context), every handler's context ends with ErrConnClosed, every pending
// call returns ErrConnClosed, Close returns (twice), and no goroutine is
// left.
func TestShutdown(t *testing.T) {
	triggers := []struct {
		name string
		do   func(t *testing.T, r *shutdownRig)
		err  func(t *testing.T, err error)
	}{
		{"Close", func(t *testing.T, r *shutdownRig) { closeWithin(t, r.conn, 5*time.Second) }, nil},
		{"peer EOF", func(t *testing.T, r *shutdownRig) { r.peer.CloseWrite() }, nil},
		{"context", func(t *testing.T, r *shutdownRig) { r.cancelCtx(errors.New("host shutting down")) },
			func(t *testing.T, err error) { assert.ErrorContains(t, err, "host shutting down") }},
	}
	for _, trig := range triggers {
		t.Run(trig.name, func(t *testing.T) {
			wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
				leaks := goleak.IgnoreCurrent()
				ctx := wiretest.Context(t)
				r := newShutdownRig(t, tr)
				trig.do(t, r)
				r.check(t)
				if trig.err != nil {
					trig.err(t, r.conn.Err())
				}
				// What the Conn wrote last: nothing, or -32800 (or the
				// marker) for what it was serving, at most once each.
				rest := r.peer.Rest(ctx)
				seen := map[string]bool{}
				for _, m := range rest {
					require.True(t, m.IsResponse(), m.Raw)
					require.False(t, seen[string(m.ID)], "second answer: %s", m.Raw)
					seen[string(m.ID)] = true
					switch string(m.ID) {
					case "1":
						assert.EqualValues(t, acprpc.CodeRequestCancelled, m.Code(), m.Raw)
					case "2":
						assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(m.Result), m.Raw)
					default:
						t.Errorf("unexpected line %s", m.Raw)
					}
				}
				r.peer.Close()
				goleak.VerifyNone(t, leaks)
			})
		})
	}
}

// Close returns promptly when the peer has stopped reading and a write is
// stuck, and leaves no goroutine behind.
func TestShutdownCloseWithStuckWrite(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		leaks := goleak.IgnoreCurrent()
		ctx := wiretest.Context(t)
		returned := make(chan struct{})
		big := strings.Repeat("x", 2<<20)
		c, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) {
			defer close(returned)
			return big, nil
		}), nil)
		p.Request("1", "x/big", "") // its answer will never be read
		wiretest.Recv(t, ctx, (<-chan struct{})(returned))
		require.NoError(t, c.Notify(ctx, "x/more", map[string]string{"pad": big}))
		start := time.Now()
		closeWithin(t, c, 5*time.Second)
		assert.Less(t, time.Since(start), 3*time.Second)
		p.Close()
		goleak.VerifyNone(t, leaks)
	})
}

// Close may be called from a request handler, and from the goroutines of
// several callers at once.
func TestShutdownCloseFromHandler(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		closed := make(chan error, 1)
		c, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(ctx context.Context, _ *acprpc.Request) (any, error) {
			closed <- acprpc.ConnFromContext(ctx).Close()
			return "bye", nil
		}), nil)
		p.Request("1", "x/close", "")
		assert.NoError(t, wiretest.Recv(t, ctx, closed))
		wiretest.Recv(t, ctx, c.Done())
		for _, m := range p.Rest(ctx) {
			assert.Equal(t, "1", string(m.ID), m.Raw)
		}
		errs := make(chan error, 4)
		for range 4 {
			go func() { errs <- c.Close() }()
		}
		for range 4 {
			assert.NoError(t, wiretest.Recv(t, ctx, errs))
		}
	})
}

// A notification handler may close the connection (an "exit" notification).
func TestShutdownCloseFromNotificationHandler(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		closed := make(chan error, 1)
		c, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(ctx context.Context, _ *acprpc.Request) (any, error) {
			closed <- acprpc.ConnFromContext(ctx).Close()
			return nil, nil
		}), nil)
		p.Notify("x/exit", "")
		assert.NoError(t, wiretest.Recv(t, ctx, closed))
		wiretest.Recv(t, ctx, c.Done())
		assert.Empty(t, p.Rest(ctx))
	})
}

// A connection whose input has already ended, or whose context is already
// done, when NewConn is called closes cleanly.
func TestShutdownAtStart(t *testing.T) {
	ctx := wiretest.Context(t)
	for range 200 {
		c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(strings.NewReader(""), wiretest.Discard), nil, nil)
		wiretest.Recv(t, ctx, c.Done())
		assert.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
		require.NoError(t, c.Close())
	}
	for range 200 {
		done, cancel := context.WithCancel(context.Background())
		cancel()
		pr, pw := io.Pipe()
		c := acprpc.NewConn(done, acprpc.NewStreamPipes(pr, pw), nil, nil)
		wiretest.Recv(t, ctx, c.Done())
		assert.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
		assert.ErrorIs(t, c.Err(), context.Canceled)
		require.NoError(t, c.Close())
	}
}
