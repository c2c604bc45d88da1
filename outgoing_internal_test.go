package acprpc

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Call given no options allocates nothing for them: the copy of the
// defaults that the options reach escapes to the heap, so it is made only
// for a Call given some.
func TestCallOptionsAllocations(t *testing.T) {
	c := &Conn{opts: Options{WaitAfterCancel: time.Second}}
	opts := []CallOption{WaitAfterCancel(time.Minute)}
	var co callOptions
	assert.Zero(t, testing.AllocsPerRun(100, func() { co = c.callOptions(nil) }))
	assert.Equal(t, time.Second, co.waitAfterCancel)
	assert.Equal(t, float64(1), testing.AllocsPerRun(100, func() { co = c.callOptions(opts) }))
	assert.Equal(t, time.Minute, co.waitAfterCancel)
}

// heldSender is a Pipe end whose try of a message naming method hands it
// over, then holds the sender (the caller of Call, which writes its own
// request) until release is closed: the caller reaches its wait for the
// answer only after whatever the test did meanwhile.
type heldSender struct {
	*pipeEnd
	method  string
	release chan struct{}
}

func (h *heldSender) trySend(msg []byte) (bool, error) {
	if err := h.pipeEnd.Send(msg); err != nil {
		return false, err
	}
	if bytes.Contains(msg, []byte(`"method":"`+h.method+`"`)) {
		<-h.release
	}
	return false, nil
}

// A call whose answer was read before its context ended returns that
// answer, even when the caller comes to wait for it only after the context
// ended: the answer and the cancel are then both there, and the answer is
// the call's, with no $/cancel_request sent.
func TestCallAnsweredBeforeTheCallerWaits(t *testing.T) {
	for round := range 20 { // a wrong pick of the two would show in one round of two
		ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		a, b := Pipe()
		held := &heldSender{pipeEnd: a.(*pipeEnd), method: "x/work", release: make(chan struct{})}
		after := make(chan struct{})
		c := NewConn(ctx, held, HandlerFunc(func(_ context.Context, req *Request) (any, error) {
			if req.Method == "x/after" { // read after the answer
				close(after)
			}
			return "pong", nil
		}), nil)
		fromConn := make(chan []byte, 8)
		go func() {
			defer close(fromConn)
			for msg, err := b.Recv(); err == nil; msg, err = b.Recv() {
				fromConn <- msg
			}
		}()
		callCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Call(callCtx, "x/work", nil, nil) }()
		require.Contains(t, string(recvWithin(t, ctx, fromConn)), `"method":"x/work"`)
		require.NoError(t, b.Send([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"refused"}}`)))
		require.NoError(t, b.Send([]byte(`{"jsonrpc":"2.0","method":"x/after"}`)))
		recvWithin(t, ctx, after)
		cancel()
		close(held.release)
		err := recvWithin(t, ctx, done)
		var rpcErr *Error
		require.ErrorAs(t, err, &rpcErr, "round %d: the answer read before the cancel is the call's", round)
		assert.Equal(t, int64(-32000), rpcErr.Code)
		assert.NotErrorIs(t, err, ErrCancelled, "round %d", round)
		require.NoError(t, b.Send([]byte(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)))
		assert.Contains(t, string(recvWithin(t, ctx, fromConn)), `"id":"ping"`, "round %d: only the ping's answer, no cancel", round)
		require.NoError(t, c.Close())
		stop()
	}
}

// recvWithin receives from ch, failing the test if ctx ends first.
func recvWithin[T any](t *testing.T, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatal("nothing came before the test's deadline")
		panic("unreachable")
	}
}
