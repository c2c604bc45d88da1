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
		p.Notify("session/update", `{"pad":"`+strings.Repeat("z", 2*limit)+`"}`)
		p.ExpectAnswer(ctx, "null")

		// The connection lives on.
		p.Request("4", "echo", "[4]")
		p.ExpectResult(ctx, "4", "[4]")

		// An over-long answer to one of our calls fails that call, and only it.
		callErr := goCall(c, ctx, "fs/read_text_file", map[string]string{"path": "big"}, nil)
		req := p.ExpectRequest(ctx, "fs/read_text_file")
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
	c, p, _ := wiretest.ConnectTapped(context.Background(), t, wiretest.OSPipe, wiretest.Mux{"echo": wiretest.Echo},
		&acprpc.Options{MaxMessageSize: limit})
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

// updateFlood is n session/update notifications, numbered, as lines.
func updateFlood(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = wiretest.NotificationLine("session/update", fmt.Sprintf(`{"sessionId":"s","n":%d}`, i))
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
	c, p, tap := wiretest.ConnectTapped(context.Background(), t, wiretest.OSPipe, h, &acprpc.Options{MaxQueuedNotifications: limit})
	lines := append(updateFlood(n), wiretest.RequestLine("1", "probe", ""))
	written := p.SendAsync([]byte(strings.Join(lines, "\n") + "\n"))
	wiretest.WaitFor(t, ctx, h.first, "the first notification")
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
	c, p, tap := wiretest.ConnectTapped(context.Background(), t, wiretest.OSPipe, h, &acprpc.Options{MaxQueuedNotifications: limit})
	lines := append([]string{wiretest.RequestLine(`"b"`, "block", "")}, updateFlood(n)...)
	lines = append(lines, wiretest.CancelLine(`"b"`))
	written := p.SendAsync([]byte(strings.Join(lines, "\n") + "\n"))
	wiretest.WaitFor(t, ctx, h.first, "the first notification")
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*wiretest.Timeout)
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
	c, p, tap := wiretest.ConnectTapped(context.Background(), t, wiretest.OSPipe, h, &acprpc.Options{MaxQueuedWrite: limit})
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
			_, err := p.End().W.Write(buf)
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
	stalledAt := wiretest.AwaitStall(t, ctx, func() int64 { return handled.Load() + chunks.Load() })
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
	ctx, cancel = context.WithTimeout(context.Background(), 3*wiretest.Timeout)
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
	wiretest.WaitFor(t, ctx, drained, "the output to end")
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
	w := wiretest.NewWire(t, side, side)

	const calls = 200
	payload := strings.Repeat("p", 10_000) // 2 MB in flight against a 64 KiB limit
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			var out struct {
				I int
				P string
			}
			err := w.A.Call(ctx, "fs/write_text_file", map[string]any{"i": i, "p": payload}, &out)
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
