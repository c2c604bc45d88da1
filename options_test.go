package acprpc_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
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

// Limit tests: each of Options' limits, what a peer over it gets, and that
// the connection lives on and answers everything exactly once.

func TestLimitsMaxMessageSize(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		wiretest.NoLeak(t)
		ctx := wiretest.Context(t)
		const limit = 1024
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"echo": wiretest.Echo}, &acprpc.Options{MaxMessageSize: limit})

		// A line of exactly the limit is accepted; one byte more is not.
		p.Send(paddedLine(t, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"pad":"`, `"}}`, limit))
		require.Nil(t, p.ExpectAnswer(ctx, "1").Error)
		p.Send(paddedLine(t, `{"jsonrpc":"2.0","id":2,"method":"echo","params":{"pad":"`, `"}}`, limit+1))
		m := p.ExpectError(ctx, "2", acprpc.CodeInvalidRequest) // the ID at the start of an over-long line is read
		require.Contains(t, m.Error.Message, "exceeds the limit")

		// An ID after the long part is found too: the whole line is scanned.
		p.Send(`{"jsonrpc":"2.0","method":"echo","params":{"pad":"` + strings.Repeat("y", 8<<10) + `"},"id":3}`)
		p.ExpectError(ctx, "3", acprpc.CodeInvalidRequest)

		// An over-long notification has no ID: its -32600 carries null.
		p.Notify("x/note", `{"pad":"`+strings.Repeat("z", 2*limit)+`"}`)
		p.ExpectAnswer(ctx, "null")

		// The connection lives on.
		p.Request("4", "echo", "[4]")
		p.ExpectResult(ctx, "4", "[4]")

		// An over-long answer to one of our calls fails that call, and only it.
		callErr := goCall(c, ctx, "x/read", map[string]string{"path": "big"}, nil)
		req := p.ExpectRequest(ctx, "x/read")
		p.Respond(string(req.ID), `{"content":"`+strings.Repeat("c", 2*limit)+`"}`)
		var rpcErr *acprpc.Error
		require.ErrorAs(t, wiretest.Recv(t, ctx, callErr), &rpcErr, "the call with an over-long answer")
		require.EqualValues(t, acprpc.CodeInternalError, rpcErr.Code)
		require.Contains(t, rpcErr.Message, "too large")
		p.Request("5", "echo", "[5]")
		p.ExpectAnswer(ctx, "5")
		require.Nil(t, c.Err())
		p.Ledger().CheckNoDuplicates(t)
	})
}

// paddedLine pads head+tail with "x" to exactly size bytes.
func paddedLine(t *testing.T, head, tail string, size int) string {
	line := head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	require.Len(t, line, size)
	return line
}

// TestLimitsOverLongLineIsNotHeld: a 32 MiB line over a 64 KiB limit is
// skipped without being kept in memory.
func TestLimitsOverLongLineIsNotHeld(t *testing.T) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	const limit = 64 << 10
	size := 32 << 20
	if testing.Short() {
		size = 8 << 20
	}
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"echo": wiretest.Echo},
		&acprpc.Options{MaxMessageSize: limit}, wiretest.With{Tapped: true})
	line := make([]byte, 0, size+64)
	line = append(line, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"pad":"`...)
	line = append(line, strings.Repeat("x", size)...)
	line = append(line, "\"}}\n"...)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sent := p.SendAsync(line)
	p.ExpectError(ctx, "1", acprpc.CodeInvalidRequest)
	runtime.ReadMemStats(&after)
	require.NoError(t, wiretest.Recv(t, ctx, sent))
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MiB line over a %d KiB limit: %d KiB allocated while it was read", size>>20, limit>>10, allocated>>10)
	require.Less(t, allocated, uint64(size/4), "the over-long line was held in memory")
	p.Request("2", "echo", "[2]")
	p.ExpectAnswer(ctx, "2")
	require.Nil(t, c.Err())
}

func TestLimitsMaxInFlight(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		wiretest.NoLeak(t)
		ctx := wiretest.Context(t)
		var rec wiretest.Recorder
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"block": rec.Block}, &acprpc.Options{MaxInFlight: 3})
		for id := 1; id <= 3; id++ {
			p.Request(strconv.Itoa(id), "block", "")
			require.Equal(t, strconv.Itoa(id), rec.NextStart(t, ctx))
		}
		require.Equal(t, 3, c.Stats().IncomingInFlight)

		// Over the limit: answered at once (while 1-3 still run), never queued.
		p.Request("4", "block", "")
		m := p.ExpectError(ctx, "4", acprpc.CodeInternalError)
		require.Contains(t, m.Error.Message, "too many requests in flight")
		require.Equal(t, 3, c.Stats().IncomingInFlight)

		// A cancel for the refused request finds nothing and gets no answer;
		// a cancel for a running one frees a place.
		p.Cancel("4")
		p.Cancel("1")
		p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)

		// Under the limit again: accepted and run.
		p.Request("5", "block", "")
		require.Equal(t, "5", rec.NextStart(t, ctx))
		require.Equal(t, 3, c.Stats().IncomingInFlight)
		for _, id := range []string{"2", "3", "5"} {
			p.Cancel(id)
			p.ExpectError(ctx, id, acprpc.CodeRequestCancelled)
		}
		require.NoError(t, c.Close())
		require.Empty(t, p.Rest(ctx), "nothing else was answered")
		p.Ledger().CheckNoDuplicates(t)
		require.Equal(t, 1, p.Ledger().Answered(wiretest.BtoA, "4"))
	})
}

// heldNotes is a handler whose notification handler holds the first
// notification until released, and records every notification's number.
type heldNotes struct {
	first   chan struct{} // closed when the first notification is held
	release chan struct{}
	once    sync.Once
	handled atomic.Int64

	mu   sync.Mutex
	seen []int
	// causeAt is how many notifications had been handled when the
	// "block" request's context ended.
	causeAt atomic.Int64
	cause   atomic.Value
}

func newHeldNotes() *heldNotes {
	h := &heldNotes{first: make(chan struct{}), release: make(chan struct{})}
	h.causeAt.Store(-1)
	return h
}

func (h *heldNotes) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		h.once.Do(func() {
			close(h.first)
			<-h.release
		})
		var p struct{ N int }
		_ = req.DecodeParams(&p)
		h.mu.Lock()
		h.seen = append(h.seen, p.N)
		h.mu.Unlock()
		h.handled.Add(1)
		return nil, nil
	}
	switch req.Method {
	case "probe":
		return h.handled.Load(), nil
	case "block":
		<-ctx.Done()
		h.causeAt.Store(h.handled.Load())
		h.cause.Store(context.Cause(ctx))
		return nil, context.Cause(ctx)
	}
	return nil, acprpc.MethodNotFound(req.Method)
}

// updateFlood is n notifications, numbered, as lines.
func updateFlood(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"x/note","params":{"n":%d}}`, i)
	}
	return lines
}

// TestLimitsMaxQueuedNotifications: a slow notification handler and a flood
// of notifications. The reader is held back rather than dropping anything:
// every notification is handled in order, and a request behind the flood is
// read, and answered, only once the queue has room for the flood.
func TestLimitsMaxQueuedNotifications(t *testing.T) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	const limit, n = 4, 300
	h := newHeldNotes()
	c, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{MaxQueuedNotifications: limit}, wiretest.With{Tapped: true})
	tap := p.Tap()
	lines := append(updateFlood(n), wiretest.RequestLine("1", "probe", ""))
	written := p.SendAsync([]byte(strings.Join(lines, "\n") + "\n"))
	wiretest.Recv(t, ctx, h.first)                                  // the first notification
	require.NoError(t, wiretest.Recv(t, ctx, written), "the flood") // the pipe holds it
	close(h.release)

	m := p.ExpectAnswer(ctx, "1")
	var handledBefore int
	require.NoError(t, json.Unmarshal(m.Result, &handledBefore))
	// The request is read after the last notification was queued, which
	// needs the queue (limit) plus the one being handled to have room.
	require.GreaterOrEqual(t, handledBefore, n-limit-1, "the reader was not held back by the full queue")
	require.NoError(t, c.Close())
	h.mu.Lock()
	defer h.mu.Unlock()
	require.GreaterOrEqual(t, len(h.seen), handledBefore)
	for i, v := range h.seen {
		require.Equal(t, i, v, "notifications are handled in order, none dropped")
	}
	tap.Ledger().CheckNoDuplicates(t)
}

// TestLimitsCancelBehindFullNotificationQueue: a $/cancel_request sent after
// a flood of notifications waits, with the reader, for the queue to have
// room; it is not dropped, and its request is answered once.
func TestLimitsCancelBehindFullNotificationQueue(t *testing.T) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	const limit, n = 4, 300
	h := newHeldNotes()
	c, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{MaxQueuedNotifications: limit}, wiretest.With{Tapped: true})
	tap := p.Tap()
	lines := append([]string{wiretest.RequestLine(`"b"`, "block", "")}, updateFlood(n)...)
	lines = append(lines, wiretest.CancelLine(`"b"`))
	written := p.SendAsync([]byte(strings.Join(lines, "\n") + "\n"))
	wiretest.Recv(t, ctx, h.first)                                  // the first notification
	require.NoError(t, wiretest.Recv(t, ctx, written), "the flood") // the pipe holds it
	close(h.release)

	p.ExpectError(ctx, `"b"`, acprpc.CodeRequestCancelled)
	require.ErrorIs(t, h.cause.Load().(error), acprpc.ErrPeerCancelled)
	require.GreaterOrEqual(t, h.causeAt.Load(), int64(n-limit-1), "the cancel overtook a full notification queue")
	require.Equal(t, uint64(1), c.Stats().CancelsReceived)
	require.NoError(t, c.Close())
	require.Empty(t, p.Rest(ctx))
	tap.Ledger().CheckNoDuplicates(t)
}

// TestLimitsMaxQueuedWrite: a peer floods requests and reads no answer. The
// connection stops reading once MaxQueuedWrite of answers wait, so the heap
// stays bounded; when the peer starts reading, every request, including a
// cancel sent in the middle of the flood, is answered exactly once.
func TestLimitsMaxQueuedWrite(t *testing.T) {
	wiretest.NoLeak(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const limit = 256 << 10
	n := *floodRequests
	if testing.Short() {
		n = min(n, 30_000)
	}
	cancelAt := n / 4
	var rec wiretest.Recorder
	var handled atomic.Int64
	mux := wiretest.Mux{"block": rec.Block, "echo": wiretest.Echo}
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		handled.Add(1)
		return mux.Handle(ctx, req)
	})
	c, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{MaxQueuedWrite: limit}, wiretest.With{Tapped: true})
	tap := p.Tap()
	p.Request(`"b"`, "block", "")
	require.Equal(t, `"b"`, rec.NextStart(t, ctx))

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)

	var chunks atomic.Int64
	flooded := make(chan error, 1)
	go func() {
		buf := make([]byte, 0, 64<<10)
		flush := func() error {
			err := p.TrySend(string(buf))
			buf = buf[:0]
			chunks.Add(1)
			return err
		}
		for i := range n {
			if i == cancelAt {
				buf = append(buf, wiretest.CancelLine(`"b"`)+"\n"...)
			}
			buf = fmt.Appendf(buf, `{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"n":%d}}`+"\n", i, i)
			if len(buf) > 60<<10 {
				if err := flush(); err != nil {
					flooded <- err
					return
				}
			}
		}
		flooded <- flush()
	}()

	// Wait for the flood to stall: neither the handlers nor the flooder
	// have made progress for a while. (This only picks the moment to look
	// at the heap; nothing below depends on it being exact.)
	stalledAt := awaitStall(t, ctx, func() int64 { return handled.Load() + chunks.Load() })
	held := handled.Load()
	runtime.GC()
	var stalled runtime.MemStats
	runtime.ReadMemStats(&stalled)
	growth := int64(stalled.HeapAlloc) - int64(base.HeapAlloc)
	t.Logf("flood of %d requests stalled after %v: %d handled, heap %+d KiB (limit %d KiB)",
		n, stalledAt, held, growth>>10, limit>>10)
	require.Less(t, held, int64(n/2), "the connection kept reading a peer that reads nothing")
	require.Less(t, growth, int64(16<<20), "the heap grew with the unread answers")

	// The peer reads: everything is answered exactly once.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wrote := tap.Ledger()
	drained := p.Drain()
	require.NoError(t, wrote.Await(ctx, func() bool { return wrote.Answers(wiretest.AtoB) >= n+1 }),
		"%d of %d answered", wrote.Answers(wiretest.AtoB), n+1)
	require.NoError(t, wiretest.Recv(t, ctx, flooded))
	for id := range n {
		require.Equal(t, 1, wrote.Answered(wiretest.BtoA, strconv.Itoa(id)), "id %d", id)
	}
	require.Equal(t, 1, wrote.Answered(wiretest.BtoA, `"b"`), "the blocked request")
	tally := wrote.Tally(wiretest.AtoB)
	require.Equal(t, n, tally.Results, "every echo answered with its result")
	require.Equal(t, map[int64]int{acprpc.CodeRequestCancelled: 1}, tally.Errors,
		"the cancel in the middle of the flood was honoured")
	require.NoError(t, c.Close())
	wiretest.Recv(t, ctx, drained) // the output to end
	require.Equal(t, n+1, wrote.Tally(wiretest.AtoB).Lines, "nothing but the answers was written")
	wrote.CheckNoDuplicates(t)
}

var floodRequests = flag.Int("limits.flood", 100_000, "requests in TestLimitsMaxQueuedWrite's flood")

// TestLimitsOwnCallsDoNotHoldReader: MaxQueuedWrite is for answers. A
// connection that calls its peer with far more than the limit in flight,
// and gets answers as large, must not stop reading those answers: two
// connections would then wait on each other for good.
func TestLimitsOwnCallsDoNotHoldReader(t *testing.T) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	side := wiretest.Side{Handler: acprpc.HandlerFunc(wiretest.Echo), Options: &acprpc.Options{MaxQueuedWrite: 64 << 10}}
	w := wiretest.NewWire(t, side, side, wiretest.With{Tapped: true})

	const calls = 200
	payload := strings.Repeat("p", 10_000) // 2 MB in flight against a 64 KiB limit
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			var out struct {
				I int
				P string
			}
			err := w.A.Call(ctx, "x/write", map[string]any{"i": i, "p": payload}, &out)
			if err == nil && (out.I != i || out.P != payload) {
				err = fmt.Errorf("call %d: wrong echo", i)
			}
			errs <- err
		}()
	}
	for range calls {
		require.NoError(t, wiretest.Recv(t, ctx, errs))
	}
	require.Zero(t, w.A.Stats().OutgoingInFlight)
	w.Ledger.CheckExactlyOnce(t, wiretest.AtoB)
}

// TestLimitsMaxOutgoing: once MaxOutgoing calls await their answers, a new
// Call fails at once and sends nothing. A cancelled call still counts until
// its answer comes, since its ID stays reserved; its cancel is sent, never
// dropped. The answer frees the place.
func TestLimitsMaxOutgoing(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		wiretest.NoLeak(t)
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"ping": wiretest.Ping}, &acprpc.Options{MaxOutgoing: 2})

		kept := goCall(c, ctx, "slow", nil, nil)
		cancelCtx, cancel := context.WithCancel(ctx)
		cancelled := goCall(c, cancelCtx, "slow", nil, nil)
		ids := map[string]bool{string(p.ExpectRequest(ctx, "slow").ID): true, string(p.ExpectRequest(ctx, "slow").ID): true}
		require.Len(t, ids, 2)

		err := c.Call(ctx, "over", nil, nil)
		require.ErrorIs(t, err, acprpc.ErrTooManyCalls)
		require.Contains(t, err.Error(), "over")

		cancel()
		require.ErrorIs(t, wiretest.Recv(t, ctx, cancelled), acprpc.ErrCancelled)
		m := p.ExpectNotification(ctx, acprpc.MethodCancelRequest) // and nothing for the refused call
		id := string(m.ParamMember("requestId"))
		require.True(t, ids[id])
		require.ErrorIs(t, c.Call(ctx, "over", nil, nil), acprpc.ErrTooManyCalls, "the cancelled call's answer is still due")

		p.RespondError(id, acprpc.CodeRequestCancelled, "Request cancelled")
		// The ping's answer shows that every line before it has been read.
		p.Request(`"sync"`, "ping", "")
		p.ExpectAnswer(ctx, `"sync"`)
		third := goCall(c, ctx, "third", nil, nil)
		p.ExpectRequest(ctx, "third")
		require.NoError(t, c.Close())
		require.ErrorIs(t, wiretest.Recv(t, ctx, kept), acprpc.ErrConnClosed)
		require.ErrorIs(t, wiretest.Recv(t, ctx, third), acprpc.ErrConnClosed)
	})
}

// Backpressure tests: the limits that hold the reader back, or refuse a
// request, keep memory bounded without stopping the reader from reading
// what would free it.

// bpUpdates is notification lines numbered from..to, each padded with
// pad bytes.
func bpUpdates(from, to, pad int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"x/note","params":{"n":%d,"pad":"%s"}}`+"\n",
			i, strings.Repeat("u", pad))
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
		written = p.SendAsync([]byte(bpUpdates(2, n+1, 0) + `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"found"}` + "\n"))
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
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{MaxQueuedNotifications: limit}, wiretest.With{Tapped: true})
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
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{MaxQueuedNotificationBytes: limit, MaxMessageSize: 5000}, wiretest.With{Tapped: true})
	written := p.SendAsync([]byte(bpUpdates(1, n, pad) + wiretest.RequestLine("1", "probe", "") + "\n"))
	wiretest.Recv(t, ctx, h.first) // the first notification
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
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"x/hold": hold},
		&acprpc.Options{MaxInFlightBytes: limit, MaxMessageSize: 1 << 20})
	before := bpHeap()
	head := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"x/hold","params":{"n":%d,"pad":"`, i, i)
	}
	pad := strings.Repeat("p", size-len(head(10))-len(`"}}`))
	written := make(chan error, 1)
	go func() {
		for i := 10; i < 10+n; i++ {
			if err := p.TrySend(fmt.Sprint(head(i), pad, "\"}}\n")); err != nil {
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

// awaitStall waits until progress has not moved for ten looks in a row, 20
// ms apart, and returns how long that took. It picks a moment to measure a
// flood that has been held back; nothing may depend on the moment being
// exact, since a busy machine can pause the flood too.
func awaitStall(t testing.TB, ctx context.Context, progress func() int64) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last, still := progress(), 0
	for still < 10 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("progress never stalled: %v", ctx.Err())
		}
		if now := progress(); now != last {
			last, still = now, 0
			continue
		}
		still++
	}
	return time.Since(start)
}
