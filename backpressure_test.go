package acprpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Backpressure tests: the limits that hold the reader back, or refuse a
// request, keep memory bounded without stopping the reader from reading
// what would free it.

// bpUpdates is session/update lines numbered from..to, each padded with
// pad bytes.
func bpUpdates(from, to, pad int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(wiretest.NotificationLine("session/update",
			fmt.Sprintf(`{"sessionId":"s","n":%d,"pad":"%s"}`, i, strings.Repeat("u", pad))) + "\n")
	}
	return b.String()
}

// bpNotes is a notification handler whose update 1 calls the peer with its
// own context and waits for the answer; a "probe" request reports how many
// updates were handled when it ran, and an "x/last" notification how many
// were handled before it.
type bpNotes struct {
	handled  atomic.Int64
	callCtx  func(context.Context) (context.Context, context.CancelFunc)
	callDone chan error
	last     chan int64
}

func newBPNotes() *bpNotes {
	return &bpNotes{callCtx: context.WithCancel, callDone: make(chan error, 1), last: make(chan int64, 1)}
}

func (h *bpNotes) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	switch req.Method {
	case "probe":
		return h.handled.Load(), nil
	case "x/last":
		h.last <- h.handled.Load()
		return nil, nil
	}
	var p struct{ N int }
	_ = req.DecodeParams(&p)
	if p.N == 1 {
		cctx, cancel := h.callCtx(ctx)
		defer cancel()
		h.callDone <- acprpc.ConnFromContext(ctx).Call(cctx, "x/lookup", nil, nil)
	}
	h.handled.Add(1)
	return nil, nil
}

// A notification handler calls the peer while the peer streams more
// notifications than MaxQueuedNotifications ahead of the answer (a client
// whose session/update handler calls the agent while the agent streams
// updates). The reader goes on reading past the full queue while that call
// waits, so the answer is read, the call returns, and every update is
// handled.
func TestBackpressureCallFromNotificationHandlerBehindFullQueue(t *testing.T) {
	const limit, n = 4, 12
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		h := newBPNotes()
		_, p := wiretest.Connect(t, tr, h, &acprpc.Options{MaxQueuedNotifications: limit})
		written := p.SendAsync([]byte(bpUpdates(1, 1, 0)))
		req := p.ExpectRequest(ctx, "x/lookup")
		require.NoError(t, wiretest.Recv(t, ctx, written))
		written = p.SendAsync([]byte(bpUpdates(2, n+1, 0) + wiretest.ResultLine(string(req.ID), `"found"`) + "\n"))
		require.NoError(t, wiretest.Recv(t, ctx, h.callDone), "the call behind the full queue")
		require.NoError(t, wiretest.Recv(t, ctx, written))
		p.Notify("x/last", "")
		assert.EqualValues(t, n+1, wiretest.Recv(t, ctx, h.last), "every update was handled")
	})
}

// The queue grows past MaxQueuedNotifications only to a second bound, four
// times the first: a peer that streams notifications and never answers the
// call still cannot make the queue grow without end. The reader waits at
// the second bound, and the call ends with its context.
func TestBackpressureNotificationQueueStillBounded(t *testing.T) {
	wiretest.NoLeak(t)
	const limit, n = 4, 60
	ctx := wiretest.Context(t)
	h := newBPNotes()
	stop := make(chan struct{})
	h.callCtx = func(parent context.Context) (context.Context, context.CancelFunc) {
		cctx, cancel := context.WithCancel(parent)
		go func() {
			select {
			case <-stop:
			case <-cctx.Done():
			}
			cancel()
		}()
		return cctx, cancel
	}
	_, p, _ := wiretest.ConnectTapped(context.Background(), t, wiretest.OSPipe, h, &acprpc.Options{MaxQueuedNotifications: limit})
	written := p.SendAsync([]byte(bpUpdates(1, n, 0) + wiretest.RequestLine("1", "probe", "") + "\n"))
	p.ExpectRequest(ctx, "x/lookup")
	require.NoError(t, wiretest.Recv(t, ctx, written), "the flood") // the pipe holds it
	close(stop)
	require.ErrorIs(t, wiretest.Recv(t, ctx, h.callDone), acprpc.ErrCancelled)
	p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
	m := p.ExpectAnswer(ctx, "1")
	var handledBefore int
	require.NoError(t, json.Unmarshal(m.Result, &handledBefore))
	// Were the queue unbounded, the probe would have been read, and run,
	// while update 1 waited: with none handled.
	assert.GreaterOrEqual(t, handledBefore, n-limit-1, "the reader was not held at the second bound")
}

// MaxQueuedNotificationBytes bounds the queue by the bytes of its messages
// as well as by their number: the reader waits once the next notification
// would take the queue over it.
func TestBackpressureNotificationBytes(t *testing.T) {
	wiretest.NoLeak(t)
	const n, pad, limit = 10, 3000, 10_000 // three notifications fit, not four
	ctx := wiretest.Context(t)
	h := newHeldNotes()
	_, p, _ := wiretest.ConnectTapped(context.Background(), t, wiretest.OSPipe, h, &acprpc.Options{MaxQueuedNotificationBytes: limit, MaxMessageSize: 5000})
	written := p.SendAsync([]byte(bpUpdates(1, n, pad) + wiretest.RequestLine("1", "probe", "") + "\n"))
	wiretest.WaitFor(t, ctx, h.first, "the first notification")
	require.NoError(t, wiretest.Recv(t, ctx, written), "the flood")
	close(h.release)
	m := p.ExpectAnswer(ctx, "1")
	var handledBefore int
	require.NoError(t, json.Unmarshal(m.Result, &handledBefore))
	// The probe is read once the last update was queued, into a queue of at
	// most two, with one being handled.
	assert.GreaterOrEqual(t, handledBefore, n-4, "the reader was not held by the bytes queued")
}

// MaxInFlightBytes bounds the bytes of the peer's requests held by their
// handlers: one that would take the total over it is answered -32603 at
// once, as over MaxInFlight, and the reader never stops, so cancels and
// the answers to our own calls still get through; once a handler returns,
// its bytes are free again.
func TestBackpressureInFlightBytes(t *testing.T) {
	const limit = 10_000
	pad := `{"pad":"` + strings.Repeat("p", 4000) + `"}`
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		started := make(chan string, 4)
		hold := func(ctx context.Context, req *acprpc.Request) (any, error) {
			started <- req.ID.String()
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"x/hold": hold, "echo": wiretest.Echo},
			&acprpc.Options{MaxInFlightBytes: limit, MaxMessageSize: 5000})
		p.Request("1", "x/hold", pad)
		p.Request("2", "x/hold", pad)
		wiretest.Recv(t, ctx, started)
		wiretest.Recv(t, ctx, started)
		p.Request("3", "x/hold", pad)
		m := p.ExpectError(ctx, "3", acprpc.CodeInternalError)
		assert.Contains(t, m.Error.Message, "bytes in flight")
		p.Request("4", "echo", `[4]`) // a small one still fits
		p.ExpectResult(ctx, "4", "[4]")

		done := make(chan error, 1)
		go func() { done <- c.Call(ctx, "peer/answer", nil, nil) }()
		req := p.ExpectRequest(ctx, "peer/answer")
		p.Respond(string(req.ID), `"ok"`)
		require.NoError(t, wiretest.Recv(t, ctx, done), "an answer to our call is read at the limit")

		p.Cancel("1")
		p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
		p.Request("5", "x/hold", pad) // request 1's bytes are free
		assert.Equal(t, "5", wiretest.Recv(t, ctx, started))
		assert.Equal(t, 2, c.Stats().IncomingInFlight)
	})
}

// What the bound is for: blocked requests of 1 MB each, four times more
// than MaxInFlightBytes holds. The connection holds the bound's worth of
// them, refuses the rest, and its heap grows by about the bound, not by
// everything sent.
func TestBackpressureInFlightBytesHoldMemory(t *testing.T) {
	const n, size, limit = 32, 1_000_000, 8 << 20 // eight fit
	ctx := wiretest.Context(t)
	started := make(chan struct{}, n)
	hold := func(ctx context.Context, _ *acprpc.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"session/prompt": hold},
		&acprpc.Options{MaxInFlightBytes: limit, MaxMessageSize: 1 << 20})
	before := bpHeap()
	head := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s%d","pad":"`, i, i)
	}
	pad := strings.Repeat("p", size-len(head(10))-len(`"}}`))
	written := make(chan error, 1)
	go func() {
		for i := 10; i < 10+n; i++ {
			if _, err := fmt.Fprint(p.End().W, head(i), pad, "\"}}\n"); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	for range n - 8 {
		m := p.Expect(ctx)
		require.EqualValues(t, acprpc.CodeInternalError, m.Code(), "%.200s", m.Raw)
	}
	require.NoError(t, wiretest.Recv(t, ctx, written))
	for range 8 {
		wiretest.Recv(t, ctx, started)
	}
	grown := int64(bpHeap()) - int64(before)
	t.Logf("heap grew by %.1f MiB holding 8 of %d requests of 1 MB", float64(grown)/(1<<20), n)
	assert.Less(t, grown, int64(2*limit), "the heap grew by more than twice MaxInFlightBytes")
}

// bpHeap is the live heap after a collection.
func bpHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
