package acprpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// Limit tests: each of Options' limits, what a peer over it gets, and that
// the connection lives on and answers everything exactly once.

// limBlock is a handler for "block" requests (which wait for their context
// and report each start on started) and "echo" requests.
func limBlock(started chan<- string) acprpc.HandlerFunc {
	return func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.IsNotification() {
			return nil, nil
		}
		if req.Method == "block" {
			started <- req.ID.String()
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		return req.Params, nil
	}
}

func TestLimitsMaxMessageSize(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	const limit = 1024
	c, p, tap := fltConnect(t, context.Background(), limBlock(nil), &acprpc.Options{MaxMessageSize: limit}, nil)

	// A line of exactly the limit is accepted; one byte more is not.
	exact := limLineOfSize(t, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"pad":"`, `"}}`, limit)
	p.send(exact)
	m := p.next()
	require.Equal(t, "1", string(m.ID))
	require.Nil(t, m.Error)
	p.send(limLineOfSize(t, `{"jsonrpc":"2.0","id":2,"method":"echo","params":{"pad":"`, `"}}`, limit+1))
	m = p.next()
	require.Equal(t, "2", string(m.ID), "the ID at the start of an over-long line is read")
	require.EqualValues(t, acprpc.CodeInvalidRequest, m.Error.Code)
	require.Contains(t, m.Error.Message, "exceeds the limit")

	// An ID past the first 4 KiB, the part of an over-long line that is
	// looked at, cannot be read: the answer has a null ID.
	p.send(`{"jsonrpc":"2.0","method":"echo","params":{"pad":"` + strings.Repeat("y", 8<<10) + `"},"id":3}`)
	m = p.next()
	require.Equal(t, "null", string(m.ID))
	require.EqualValues(t, acprpc.CodeInvalidRequest, m.Error.Code)

	// An over-long notification cannot be told from a request whose ID was
	// cut off, so it too gets a null-ID -32600.
	p.send(`{"jsonrpc":"2.0","method":"session/update","params":{"pad":"` + strings.Repeat("z", 2*limit) + `"}}`)
	m = p.next()
	require.Equal(t, "null", string(m.ID))

	// The connection lives on.
	p.send(`{"jsonrpc":"2.0","id":4,"method":"echo","params":[4]}`)
	m = p.next()
	require.Equal(t, "4", string(m.ID))
	require.JSONEq(t, `[4]`, string(m.Result))

	// An over-long answer to one of our calls fails that call, and only it.
	callErr := make(chan error, 1)
	go func() { callErr <- c.Call(ctx, "fs/read_text_file", map[string]string{"path": "big"}, nil) }()
	req := p.next()
	p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":"` + strings.Repeat("c", 2*limit) + `"}}`)
	select {
	case err := <-callErr:
		var rpcErr *acprpc.Error
		require.ErrorAs(t, err, &rpcErr)
		require.EqualValues(t, acprpc.CodeInternalError, rpcErr.Code)
		require.Contains(t, rpcErr.Message, "too large")
	case <-ctx.Done():
		require.FailNow(t, "the call with an over-long answer did not return")
	}
	p.send(`{"jsonrpc":"2.0","id":5,"method":"echo","params":[5]}`)
	require.Equal(t, "5", string(p.next().ID))
	require.Nil(t, c.Err())
	tap.requireNoDuplicates(t)
}

// limLineOfSize pads head+tail with "x" to exactly size bytes.
func limLineOfSize(t *testing.T, head, tail string, size int) string {
	line := head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	require.Len(t, line, size)
	return line
}

// TestLimitsOverLongLineIsNotHeld: a 32 MiB line over a 64 KiB limit is
// skipped without being kept in memory.
func TestLimitsOverLongLineIsNotHeld(t *testing.T) {
	fltNoLeak(t)
	const limit = 64 << 10
	size := 32 << 20
	if testing.Short() {
		size = 8 << 20
	}
	c, p, _ := fltConnect(t, context.Background(), limBlock(nil), &acprpc.Options{MaxMessageSize: limit}, nil)
	line := make([]byte, 0, size+64)
	line = append(line, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"pad":"`...)
	line = append(line, bytes.Repeat([]byte("x"), size)...)
	line = append(line, "\"}}\n"...)

	sent := make(chan error, 1)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	go func() { _, err := p.w.Write(line); sent <- err }()
	m := p.next()
	runtime.ReadMemStats(&after)
	require.NoError(t, <-sent)
	require.Equal(t, "1", string(m.ID))
	require.EqualValues(t, acprpc.CodeInvalidRequest, m.Error.Code)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MiB line over a %d KiB limit: %d KiB allocated while it was read", size>>20, limit>>10, allocated>>10)
	require.Less(t, allocated, uint64(size/4), "the over-long line was held in memory")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"echo","params":[2]}`)
	require.Equal(t, "2", string(p.next().ID))
	require.Nil(t, c.Err())
}

func TestLimitsMaxInFlight(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	started := make(chan string, 10)
	c, p, tap := fltConnect(t, context.Background(), limBlock(started), &acprpc.Options{MaxInFlight: 3}, nil)
	for id := 1; id <= 3; id++ {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"block"}`, id))
		require.Equal(t, strconv.Itoa(id), limNext(t, ctx, started))
	}
	require.Equal(t, 3, c.Stats().IncomingInFlight)

	// Over the limit: answered at once (while 1-3 still run), never queued.
	p.send(`{"jsonrpc":"2.0","id":4,"method":"block"}`)
	m := p.next()
	require.Equal(t, "4", string(m.ID))
	require.EqualValues(t, acprpc.CodeInternalError, m.Error.Code)
	require.Contains(t, m.Error.Message, "too many requests in flight")
	require.Equal(t, 3, c.Stats().IncomingInFlight)

	// A cancel for the refused request finds nothing and gets no answer;
	// a cancel for a running one frees a place.
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":4}}`)
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`)
	m = p.next()
	require.Equal(t, "1", string(m.ID))
	require.EqualValues(t, acprpc.CodeRequestCancelled, m.Error.Code)

	// Under the limit again: accepted and run.
	p.send(`{"jsonrpc":"2.0","id":5,"method":"block"}`)
	require.Equal(t, "5", limNext(t, ctx, started))
	require.Equal(t, 3, c.Stats().IncomingInFlight)
	for _, id := range []string{"2", "3", "5"} {
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":` + id + `}}`)
		m = p.next()
		require.Equal(t, id, string(m.ID))
		require.EqualValues(t, acprpc.CodeRequestCancelled, m.Error.Code)
	}
	require.NoError(t, c.Close())
	require.Empty(t, p.readToEOF(), "nothing else was answered")
	tap.requireNoDuplicates(t)
	require.Equal(t, 1, tap.answerCounts()["4"])
}

func limNext(t *testing.T, ctx context.Context, ch <-chan string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		require.FailNow(t, "timed out")
		return ""
	}
}

// limNotes is a handler whose notification handler holds the first
// notification until released, and records every notification's number.
type limNotes struct {
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

func limNewNotes() *limNotes {
	l := &limNotes{first: make(chan struct{}), release: make(chan struct{})}
	l.causeAt.Store(-1)
	return l
}

func (l *limNotes) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		l.once.Do(func() {
			close(l.first)
			<-l.release
		})
		var p struct{ N int }
		_ = req.DecodeParams(&p)
		l.mu.Lock()
		l.seen = append(l.seen, p.N)
		l.mu.Unlock()
		l.handled.Add(1)
		return nil, nil
	}
	switch req.Method {
	case "probe":
		return l.handled.Load(), nil
	case "block":
		<-ctx.Done()
		l.causeAt.Store(l.handled.Load())
		l.cause.Store(context.Cause(ctx))
		return nil, context.Cause(ctx)
	}
	return nil, acprpc.MethodNotFound(req.Method)
}

// limFlood writes lines to the Conn's input on a goroutine of its own (the
// pipe may fill) and returns a channel closed once all were written.
func limFlood(t *testing.T, p *fltPeer, lines []string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := io.WriteString(p.w, strings.Join(lines, "\n")+"\n")
		if err != nil {
			t.Errorf("flood: %v", err)
		}
	}()
	return done
}

// TestLimitsMaxQueuedNotifications: a slow notification handler and a flood
// of notifications. The reader is held back rather than dropping anything:
// every notification is handled in order, and a request behind the flood is
// read, and answered, only once the queue has room for the flood.
func TestLimitsMaxQueuedNotifications(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	const limit, n = 4, 300
	h := limNewNotes()
	c, p, tap := fltConnect(t, context.Background(), h, &acprpc.Options{MaxQueuedNotifications: limit}, nil)
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":%d}}`, i))
	}
	lines = append(lines, `{"jsonrpc":"2.0","id":1,"method":"probe"}`)
	written := limFlood(t, p, lines)
	fltWait(t, ctx, h.first, "the first notification")
	fltWait(t, ctx, written, "the flood to be written")
	close(h.release)

	m := p.next()
	require.Equal(t, "1", string(m.ID))
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
	tap.requireNoDuplicates(t)
}

// TestLimitsCancelBehindFullNotificationQueue: a $/cancel_request sent after
// a flood of notifications waits, with the reader, for the queue to have
// room; it is not dropped, and its request is answered once.
func TestLimitsCancelBehindFullNotificationQueue(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	const limit, n = 4, 300
	h := limNewNotes()
	c, p, tap := fltConnect(t, context.Background(), h, &acprpc.Options{MaxQueuedNotifications: limit}, nil)
	lines := []string{`{"jsonrpc":"2.0","id":"b","method":"block"}`}
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":%d}}`, i))
	}
	lines = append(lines, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"b"}}`)
	written := limFlood(t, p, lines)
	fltWait(t, ctx, h.first, "the first notification")
	fltWait(t, ctx, written, "the flood to be written")
	close(h.release)

	m := p.next()
	require.Equal(t, `"b"`, string(m.ID))
	require.EqualValues(t, acprpc.CodeRequestCancelled, m.Error.Code)
	require.ErrorIs(t, h.cause.Load().(error), acprpc.ErrPeerCancelled)
	require.GreaterOrEqual(t, h.causeAt.Load(), int64(n-limit-1), "the cancel overtook a full notification queue")
	require.Equal(t, uint64(1), c.Stats().CancelsReceived)
	require.NoError(t, c.Close())
	tap.requireNoDuplicates(t)
}

// TestLimitsMaxQueuedWrite: a peer floods requests and reads no answer. The
// connection stops reading once MaxQueuedWrite of answers wait, so the heap
// stays bounded; when the peer starts reading, every request, including a
// cancel sent in the middle of the flood, is answered exactly once.
func TestLimitsMaxQueuedWrite(t *testing.T) {
	fltNoLeak(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*fltTimeout)
	defer cancel()
	const limit = 256 << 10
	n := *limFloodRequests
	if testing.Short() {
		n = min(n, 30_000)
	}
	cancelAt := n / 4
	started := make(chan string, 1)
	var handled atomic.Int64
	inner := limBlock(started)
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		handled.Add(1)
		return inner(ctx, req)
	})
	c, p, tap := fltConnect(t, context.Background(), h, &acprpc.Options{MaxQueuedWrite: limit}, nil)
	p.send(`{"jsonrpc":"2.0","id":"b","method":"block"}`)
	require.Equal(t, `"b"`, limNext(t, ctx, started))

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)

	var chunks atomic.Int64
	flooded := make(chan error, 1)
	go func() {
		buf := make([]byte, 0, 64<<10)
		flush := func() error {
			_, err := p.w.Write(buf)
			buf = buf[:0]
			chunks.Add(1)
			return err
		}
		for i := range n {
			if i == cancelAt {
				buf = append(buf, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"b"}}`+"\n"...)
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
	stalledAt := limStall(t, ctx, func() int64 { return handled.Load() + chunks.Load() })
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
	answers := make([]uint8, n)
	var blockAnswer fltMsg
	require.NoError(t, p.r.SetReadDeadline(time.Now().Add(3*fltTimeout)))
	for got := 0; got < n+1; got++ {
		line, err := p.br.ReadSlice('\n')
		require.NoError(t, err, "after %d answers", got)
		// The echo answers are all alike; only the odd line is decoded.
		const head, tail = `{"jsonrpc":"2.0","id":`, `,"result":{"n":`
		if rest, ok := bytes.CutPrefix(line, []byte(head)); ok {
			if i := bytes.Index(rest, []byte(tail)); i > 0 {
				if id, err := strconv.Atoi(string(rest[:i])); err == nil && id >= 0 && id < n {
					answers[id]++
					require.Equal(t, uint8(1), answers[id], "id %d answered twice", id)
					continue
				}
			}
		}
		var m fltMsg
		require.NoError(t, json.Unmarshal(line, &m))
		require.Equal(t, `"b"`, string(m.ID), "unexpected line %s", line)
		require.Equal(t, fltMsg{}, blockAnswer, "b answered twice")
		blockAnswer = m
	}
	for id, k := range answers {
		require.Equal(t, uint8(1), k, "id %d", id)
	}
	require.NoError(t, <-flooded)
	require.NotNil(t, blockAnswer.Error, "the cancel in the middle of the flood was honoured")
	require.EqualValues(t, acprpc.CodeRequestCancelled, blockAnswer.Error.Code)
	require.NoError(t, c.Close())
	require.Empty(t, p.readToEOF())
	tap.requireNoDuplicates(t)
}

var limFloodRequests = flag.Int("limits.flood", 100_000, "requests in TestLimitsMaxQueuedWrite's flood")

// limStall waits until progress has not moved for ten ticks in a row and
// returns how long that took.
func limStall(t *testing.T, ctx context.Context, progress func() int64) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last, still := progress(), 0
	for still < 10 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			require.FailNow(t, "the flood never stalled")
		}
		if now := progress(); now != last {
			last, still = now, 0
			continue
		}
		still++
	}
	return time.Since(start)
}

// TestLimitsOwnCallsDoNotHoldReader: MaxQueuedWrite is for answers. A
// connection that calls its peer with far more than the limit in flight,
// and gets answers as large, must not stop reading those answers: two
// connections would then wait on each other for good.
func TestLimitsOwnCallsDoNotHoldReader(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	aIn, bOut, err := os.Pipe()
	require.NoError(t, err)
	bIn, aOut, err := os.Pipe()
	require.NoError(t, err)
	echo := acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) { return req.Params, nil })
	opts := &acprpc.Options{MaxQueuedWrite: 64 << 10}
	a := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(aIn, aOut), echo, opts)
	b := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(bIn, bOut), echo, opts)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })

	const calls = 200
	payload := strings.Repeat("p", 10_000) // 2 MB in flight against a 64 KiB limit
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			var out struct {
				I int
				P string
			}
			err := a.Call(ctx, "fs/write_text_file", map[string]any{"i": i, "p": payload}, &out)
			if err == nil && (out.I != i || out.P != payload) {
				err = fmt.Errorf("call %d: wrong echo", i)
			}
			errs <- err
		}()
	}
	for range calls {
		require.NoError(t, <-errs)
	}
	require.Zero(t, a.Stats().OutgoingInFlight)
}

// TestLimitsMaxOutgoing: once MaxOutgoing calls await their answers, a new
// Call fails at once and sends nothing. A cancelled call still counts until
// its answer comes, since its ID stays reserved; its cancel is sent, never
// dropped. The answer frees the place.
func TestLimitsMaxOutgoing(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	// The peer's "sync" request, answered, shows that every line before it
	// has been read.
	sync := acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) { return "synced", nil })
	c, p, _ := fltConnect(t, context.Background(), sync, &acprpc.Options{MaxOutgoing: 2}, nil)

	kept := make(chan error, 1)
	go func() { kept <- c.Call(ctx, "slow", nil, nil) }()
	cancelCtx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() { cancelled <- c.Call(cancelCtx, "slow", nil, nil) }()
	ids := map[string]bool{string(p.next().ID): true, string(p.next().ID): true}
	require.Len(t, ids, 2)

	err := c.Call(ctx, "over", nil, nil)
	require.ErrorIs(t, err, acprpc.ErrTooManyCalls)
	require.Contains(t, err.Error(), "over")

	cancel()
	require.ErrorIs(t, limRecv(t, ctx, cancelled), acprpc.ErrCancelled)
	m := p.next()
	require.Equal(t, acprpc.MethodCancelRequest, m.Method, "the cancel is sent, and nothing for the refused call")
	var params struct{ RequestID json.RawMessage }
	require.NoError(t, json.Unmarshal(m.Params, &params))
	require.True(t, ids[string(params.RequestID)])
	require.ErrorIs(t, c.Call(ctx, "over", nil, nil), acprpc.ErrTooManyCalls, "the cancelled call's answer is still due")

	p.send(`{"jsonrpc":"2.0","id":` + string(params.RequestID) + `,"error":{"code":-32800,"message":"Request cancelled"}}`)
	p.send(`{"jsonrpc":"2.0","id":"sync","method":"sync"}`)
	require.Equal(t, `"sync"`, string(p.next().ID))
	third := make(chan error, 1)
	go func() { third <- c.Call(ctx, "third", nil, nil) }()
	require.Equal(t, "third", p.next().Method)
	require.NoError(t, c.Close())
	require.ErrorIs(t, limRecv(t, ctx, kept), acprpc.ErrConnClosed)
	require.ErrorIs(t, limRecv(t, ctx, third), acprpc.ErrConnClosed)
}

func limRecv(t *testing.T, ctx context.Context, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		require.FailNow(t, "a call did not return")
		return nil
	}
}
