package acprpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/acpkit/acprpc"
)

// Fault tests: the peer dies at every point of the ACP cascade, input ends in
// the middle of a line, the peer stops reading, the writer fails, the parent
// context ends, and Close races everything else. After each, every handler's
// context ended with the right cause, every pending call returned an error
// matching ErrConnClosed, no answer went out twice, and no goroutine is left.

// fltTimeout bounds every wait; a test that reaches it has already failed.
const fltTimeout = 10 * time.Second

func fltContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), fltTimeout)
	t.Cleanup(cancel)
	return ctx
}

// fltNoLeak fails t if a goroutine started during the test outlives it. It
// must be called first, so that its check runs after every other cleanup.
func fltNoLeak(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// fltWait waits for ch or fails the test.
func fltWait(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		require.FailNow(t, "timed out waiting: "+what)
	}
}

// fltTap stands between a Conn and its output and records every line the
// Conn managed to write: how many answers each ID got, and how many bytes the
// Conn asked to write.
type fltTap struct {
	w         io.WriteCloser
	attempted atomic.Int64

	mu        sync.Mutex
	partial   []byte
	answers   map[string]int // raw ID → answers written
	requests  map[string]string
	notes     []string // notification methods, in order
	lines     int
	threshold int64
	past      chan struct{} // closed once attempted reaches threshold
}

func fltNewTap(w io.WriteCloser) *fltTap {
	return &fltTap{w: w, answers: map[string]int{}, requests: map[string]string{}}
}

// attemptedPast returns a channel closed once the Conn has asked to write at
// least n bytes in all.
func (t *fltTap) attemptedPast(n int64) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.threshold, t.past = n, make(chan struct{})
	if t.attempted.Load() >= n {
		close(t.past)
		t.past = nil
	}
	return t.pastOrClosed()
}

func (t *fltTap) pastOrClosed() <-chan struct{} {
	if t.past == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return t.past
}

func (t *fltTap) Write(p []byte) (int, error) {
	total := t.attempted.Add(int64(len(p)))
	t.mu.Lock()
	if t.past != nil && total >= t.threshold {
		close(t.past)
		t.past = nil
	}
	t.mu.Unlock()
	n, err := t.w.Write(p)
	t.record(p[:n])
	return n, err
}

func (t *fltTap) Close() error { return t.w.Close() }

func (t *fltTap) record(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, b...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			return
		}
		t.line(t.partial[:i])
		t.partial = t.partial[i+1:]
	}
}

// fltMsg is as much of a line as the fault tests look at.
type fltMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *acprpc.Error   `json:"error"`
}

func (m fltMsg) isAnswer() bool { return m.Method == "" && (m.Result != nil || m.Error != nil) }

func (t *fltTap) line(b []byte) {
	t.lines++
	var m fltMsg
	if json.Unmarshal(b, &m) != nil {
		t.answers["unparsable"]++
		return
	}
	switch {
	case m.isAnswer():
		id := string(m.ID)
		if id == "" {
			id = "null"
		}
		t.answers[id]++
	case m.ID != nil:
		t.requests[string(m.ID)] = m.Method
	default:
		t.notes = append(t.notes, m.Method)
	}
}

// answerCounts returns a copy of the answers written per ID.
func (t *fltTap) answerCounts() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.answers))
	for k, v := range t.answers {
		out[k] = v
	}
	return out
}

// wroteMethod reports whether a request of this method went out whole.
func (t *fltTap) wroteMethod(method string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.requests {
		if m == method {
			return true
		}
	}
	return false
}

// requireNoDuplicates fails if any ID (null aside: it answers lines that had
// none) was answered more than once.
func (t *fltTap) requireNoDuplicates(tb testing.TB) {
	tb.Helper()
	for id, n := range t.answerCounts() {
		if id != "null" {
			require.LessOrEqual(tb, n, 1, "id %s answered %d times", id, n)
		}
		require.NotEqual(tb, "unparsable", id, "the Conn wrote a line that is not JSON")
	}
}

// fltPeer is the raw far end of a Conn over two os.Pipes.
type fltPeer struct {
	t  *testing.T
	w  *os.File // the Conn's input
	r  *os.File // the Conn's output
	br *bufio.Reader
}

// fltConnect starts a Conn over two os.Pipes, its output going through a
// tap, and wrap (if set) around the tap, and returns the raw far end.
func fltConnect(t *testing.T, ctx context.Context, h acprpc.Handler, opts *acprpc.Options,
	wrap func(io.WriteCloser) io.WriteCloser) (*acprpc.Conn, *fltPeer, *fltTap) {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	tap := fltNewTap(outW)
	var out io.WriteCloser = tap
	if wrap != nil {
		out = wrap(tap)
	}
	c := acprpc.NewConn(ctx, acprpc.NewStreamPipes(inR, out), h, opts)
	p := &fltPeer{t: t, w: inW, r: outR, br: bufio.NewReaderSize(outR, 64<<10)}
	t.Cleanup(func() {
		_ = c.Close()
		p.kill()
	})
	return c, p, tap
}

func (p *fltPeer) send(line string) {
	p.t.Helper()
	_, err := io.WriteString(p.w, line+"\n")
	require.NoError(p.t, err)
}

func (p *fltPeer) sendRaw(s string) {
	p.t.Helper()
	_, err := io.WriteString(p.w, s)
	require.NoError(p.t, err)
}

// next reads the Conn's next line.
func (p *fltPeer) next() fltMsg {
	p.t.Helper()
	require.NoError(p.t, p.r.SetReadDeadline(time.Now().Add(fltTimeout)))
	line, err := p.br.ReadBytes('\n')
	require.NoError(p.t, err, "reading the Conn's next line (got %q)", line)
	var m fltMsg
	require.NoError(p.t, json.Unmarshal(line, &m), "line %q", line)
	return m
}

// readToEOF reads the Conn's output until it ends and returns the lines.
func (p *fltPeer) readToEOF() []fltMsg {
	p.t.Helper()
	require.NoError(p.t, p.r.SetReadDeadline(time.Now().Add(fltTimeout)))
	var out []fltMsg
	for {
		line, err := p.br.ReadBytes('\n')
		if len(line) > 0 {
			var m fltMsg
			require.NoError(p.t, json.Unmarshal(line, &m), "line %q", line)
			out = append(out, m)
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(p.t, err)
	}
}

// kill closes both of the peer's ends, as a peer process that dies does.
func (p *fltPeer) kill() {
	_ = p.w.Close()
	_ = p.r.Close()
}

// fltRecorder keeps the context of every request handler.
type fltRecorder struct {
	mu   sync.Mutex
	ctxs map[string]context.Context // by name
}

func fltNewRecorder() *fltRecorder { return &fltRecorder{ctxs: map[string]context.Context{}} }

// block is a handler's body that ignores nothing: it records its context,
// says it has started, and returns its context's cause once it ends.
func (r *fltRecorder) block(ctx context.Context, name string, started chan<- struct{}) (any, error) {
	r.start(ctx, name)
	close(started)
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

func (r *fltRecorder) start(ctx context.Context, name string) {
	r.mu.Lock()
	r.ctxs[name] = ctx
	r.mu.Unlock()
}

func (r *fltRecorder) ctx(name string) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctxs[name]
}

// requireCauses checks every recorded handler context's cause.
func (r *fltRecorder) requireCauses(t *testing.T, want error) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, hctx := range r.ctxs {
		require.ErrorIs(t, context.Cause(hctx), want, name)
	}
}

// fltSettled closes c and waits until every request it served has been
// answered (or its answer dropped), which is after its handler returned:
// once Close has returned nothing new is served, and an entry leaves the
// in-flight table only when its handler's return is answered. With nothing
// to wake on, the table is polled.
func fltSettled(t *testing.T, ctx context.Context, c *acprpc.Conn) {
	t.Helper()
	require.NoError(t, c.Close())
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for c.Stats().IncomingInFlight > 0 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			require.FailNow(t, "handlers did not return", "%d still in flight", c.Stats().IncomingInFlight)
		}
	}
}

// The cascade of the wire facts, as the agent's handler plays it: a prompt
// sends an update, then calls the client twice with its own context; a
// session/cancel cancels the prompt, which cancels both calls.
const (
	fltPrompt     = `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`
	fltSessCancel = `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`
	fltMarkerPerm = `{"outcome":{"outcome":"cancelled"}}`
)

// fltCascadeAgent is the agent's handler. The errors of its two calls are
// recorded by method.
type fltCascadeAgent struct {
	rec   *fltRecorder
	mu    sync.Mutex
	calls map[string]error
}

func (a *fltCascadeAgent) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		return nil, nil
	}
	if req.Method != "session/prompt" {
		return nil, acprpc.MethodNotFound(req.Method)
	}
	a.rec.start(ctx, req.Method)
	conn := acprpc.ConnFromContext(ctx)
	_ = conn.Notify(ctx, "session/update", map[string]any{"sessionId": "s",
		"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]string{"type": "text", "text": "working"}}})
	var wg sync.WaitGroup
	for _, m := range []string{"terminal/create", "session/request_permission"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out json.RawMessage
			err := conn.Call(ctx, m, map[string]string{"sessionId": "s"}, &out)
			a.mu.Lock()
			a.calls[m] = err
			a.mu.Unlock()
		}()
	}
	wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, err := range a.calls {
		if err != nil {
			return nil, err
		}
	}
	return map[string]string{"stopReason": "end_turn"}, nil
}

// fltCascadeStep is one message of the cascade, from the peer's side.
type fltCascadeStep struct {
	name string
	out  bool // the peer sends it; otherwise the peer reads it
}

var fltCascade = []fltCascadeStep{
	{"session/prompt", true},
	{"session/update", false},
	{"agent request 1", false},
	{"agent request 2", false},
	{"session/cancel", true},
	{"$/cancel_request 1", false},
	{"$/cancel_request 2", false},
	{"answer to terminal/create", true},
	{"answer to session/request_permission", true},
	{"prompt answer", false},
}

// TestFaultsPeerDiesInCascade kills the raw client after each message of the
// cascade, and in the middle of each, and checks what the agent's Conn did.
func TestFaultsPeerDiesInCascade(t *testing.T) {
	for k := 0; k <= len(fltCascade); k++ {
		t.Run(fmt.Sprintf("after_%d", k), func(t *testing.T) { fltRunCascade(t, k, false) })
	}
	for k := 1; k <= len(fltCascade); k++ {
		t.Run(fmt.Sprintf("inside_%d", k), func(t *testing.T) { fltRunCascade(t, k, true) })
	}
}

// fltRunCascade plays the cascade as the client and kills the peer after k
// messages, or, with mid set, halfway through message k.
func fltRunCascade(t *testing.T, k int, mid bool) {
	fltNoLeak(t)
	ctx := fltContext(t)
	agent := &fltCascadeAgent{rec: fltNewRecorder(), calls: map[string]error{}}
	c, p, tap := fltConnect(t, context.Background(), agent,
		&acprpc.Options{WaitAfterCancel: fltTimeout, CancelGrace: -1}, nil)

	idOf := map[string]string{} // method → the agent's request ID
	delivered := map[string]bool{}
	for i, step := range fltCascade {
		n := i + 1
		if !mid && n == k+1 {
			break
		}
		half := mid && n == k
		if !step.out {
			if half {
				for range 5 {
					_, err := p.br.ReadByte()
					require.NoError(t, err)
				}
				break
			}
			m := p.next()
			switch {
			case step.name == "session/update":
				require.Equal(t, "session/update", m.Method)
			case strings.HasPrefix(step.name, "agent request"):
				require.NotNil(t, m.ID, "expected a request, got %+v", m)
				idOf[m.Method] = string(m.ID)
			case strings.HasPrefix(step.name, "$/cancel_request"):
				require.Equal(t, acprpc.MethodCancelRequest, m.Method)
			default:
				require.Equal(t, "1", string(m.ID))
				require.JSONEq(t, `{"stopReason":"cancelled"}`, string(m.Result))
			}
			continue
		}
		var line string
		switch step.name {
		case "session/prompt":
			line = fltPrompt
		case "session/cancel":
			line = fltSessCancel
		case "answer to terminal/create":
			line = `{"jsonrpc":"2.0","id":` + idOf["terminal/create"] + `,"error":{"code":-32800,"message":"Request cancelled"}}`
		default:
			line = `{"jsonrpc":"2.0","id":` + idOf["session/request_permission"] + `,"result":` + fltMarkerPerm + `}`
		}
		if half {
			p.sendRaw(line[:len(line)/2])
			break
		}
		p.send(line)
		delivered[step.name] = true
	}
	p.kill()

	fltWait(t, ctx, c.Done(), "the Conn to close")
	require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
	fltSettled(t, ctx, c)
	agent.mu.Lock()
	defer agent.mu.Unlock()

	hctx := agent.rec.ctx("session/prompt")
	if !delivered["session/prompt"] {
		require.Nil(t, hctx, "no prompt was sent, yet a handler ran")
	} else {
		require.NotNil(t, hctx, "the prompt was delivered but its handler never ran")
		want := acprpc.ErrConnClosed
		if delivered["session/cancel"] {
			want = acprpc.ErrSessionCancelled
		}
		require.ErrorIs(t, context.Cause(hctx), want)
		for method, err := range agent.calls {
			if delivered["answer to "+method] {
				if method == "terminal/create" {
					require.ErrorIs(t, err, acprpc.ErrCancelled)
				} else {
					require.NoError(t, err, "the marker is a result")
				}
				continue
			}
			require.Error(t, err, method)
			if tap.wroteMethod(method) {
				require.ErrorIs(t, err, acprpc.ErrConnClosed, "%s was pending when the peer died", method)
			} else {
				// Never sent: the connection was already closing.
				require.True(t, errors.Is(err, acprpc.ErrConnClosed) || errors.Is(err, context.Canceled), "%s: %v", method, err)
			}
		}
	}
	tap.requireNoDuplicates(t)
	counts := tap.answerCounts()
	if k == len(fltCascade) && !mid {
		require.Equal(t, 1, counts["1"], "the prompt's answer")
	}
}

// TestFaultsHandlerCallPendingWhenPeerDies: a handler's call to the peer,
// made with the handler's own context as ACP agents do, is pending when the
// peer dies. The handler's context and the call both end; the call's error
// must say the connection closed, not that someone cancelled it.
func TestFaultsHandlerCallPendingWhenPeerDies(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	for range rounds {
		callErr := make(chan error, 1)
		h := acprpc.HandlerFunc(func(hctx context.Context, req *acprpc.Request) (any, error) {
			err := acprpc.ConnFromContext(hctx).Call(hctx, "fs/read_text_file", map[string]string{"path": "a"}, nil)
			callErr <- err
			return nil, err
		})
		c, p, _ := fltConnect(t, context.Background(), h, nil, nil)
		p.send(fltPrompt)
		require.Equal(t, "fs/read_text_file", p.next().Method)
		p.kill()
		select {
		case err := <-callErr:
			require.ErrorIs(t, err, acprpc.ErrConnClosed)
			require.NotErrorIs(t, err, acprpc.ErrCancelled)
		case <-ctx.Done():
			require.FailNow(t, "the pending call did not return")
		}
		require.NoError(t, c.Close())
	}
}

// TestFaultsPartialLineThenEOF ends the Conn's input in the middle of a line,
// with a call and a handler pending, while the peer still reads.
func TestFaultsPartialLineThenEOF(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	rec := fltNewRecorder()
	started := make(chan struct{})
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		return rec.block(ctx, req.Method, started)
	})
	c, p, tap := fltConnect(t, context.Background(), h, nil, nil)

	p.send(`{"jsonrpc":"2.0","id":"long","method":"block"}`)
	fltWait(t, ctx, started, "the handler to start")
	callErr := make(chan error, 1)
	go func() {
		callErr <- c.Call(context.Background(), "fs/read_text_file", map[string]string{"path": "x"}, nil)
	}()
	req := p.next()
	require.Equal(t, "fs/read_text_file", req.Method)

	p.sendRaw(`{"jsonrpc":"2.0","id":9,"method":"ec`)
	require.NoError(t, p.w.Close())

	// The broken line is answered -32700; the blocked request's handler
	// sees ErrConnClosed, and its -32800 may still make the closing flush.
	rest := p.readToEOF()
	require.NotEmpty(t, rest)
	require.Equal(t, "null", string(rest[0].ID))
	require.EqualValues(t, acprpc.CodeParseError, rest[0].Error.Code)
	for _, m := range rest[1:] {
		require.Equal(t, `"long"`, string(m.ID), "unexpected line %+v", m)
		require.EqualValues(t, acprpc.CodeRequestCancelled, m.Error.Code)
	}
	require.LessOrEqual(t, len(rest), 2)

	fltWait(t, ctx, c.Done(), "the Conn to close")
	require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
	require.ErrorIs(t, c.Err(), io.EOF)
	select {
	case err := <-callErr:
		require.ErrorIs(t, err, acprpc.ErrConnClosed)
	case <-ctx.Done():
		require.FailNow(t, "the pending call did not return")
	}
	fltSettled(t, ctx, c)
	require.ErrorIs(t, context.Cause(rec.ctx("block")), acprpc.ErrConnClosed)
	tap.requireNoDuplicates(t)
	require.NoError(t, c.Close())
}

// TestFaultsLastLineWithoutNewline: a complete message cut off from its "\n"
// by the end of input is still a message; it is answered at most once.
func TestFaultsLastLineWithoutNewline(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	c, p, tap := fltConnect(t, context.Background(), acprpc.HandlerFunc(
		func(ctx context.Context, req *acprpc.Request) (any, error) { return "ok", nil }), nil, nil)
	p.sendRaw(`{"jsonrpc":"2.0","id":3,"method":"echo"}`)
	require.NoError(t, p.w.Close())
	rest := p.readToEOF()
	require.LessOrEqual(t, len(rest), 1)
	for _, m := range rest {
		require.Equal(t, "3", string(m.ID))
		if m.Error != nil {
			require.EqualValues(t, acprpc.CodeRequestCancelled, m.Error.Code)
		} else {
			require.JSONEq(t, `"ok"`, string(m.Result))
		}
	}
	fltWait(t, ctx, c.Done(), "the Conn to close")
	tap.requireNoDuplicates(t)
	require.NoError(t, c.Close())
}

// TestFaultsPeerStopsReading: the peer floods requests and never reads, so
// the kernel's pipe buffers and the write queue fill and the writer blocks.
// A caller's cancel still returns at once (its $/cancel_request only
// queued), Notify too, and Close returns, ending everything.
func TestFaultsPeerStopsReading(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	rec := fltNewRecorder()
	blocked := make(chan struct{})
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method == "block" {
			return rec.block(ctx, req.Method, blocked)
		}
		return req.Params, nil
	})
	c, p, tap := fltConnect(t, context.Background(), h, &acprpc.Options{MaxQueuedWrite: 64 << 10}, nil)
	p.send(`{"jsonrpc":"2.0","id":"b","method":"block"}`)
	fltWait(t, ctx, blocked, "the blocking handler")

	// Two calls of our own, pending; the peer will never answer them.
	callCtx, cancelCall := context.WithCancel(context.Background())
	defer cancelCall()
	cancelledErr, closedErr := make(chan error, 1), make(chan error, 1)
	go func() { cancelledErr <- c.Call(callCtx, "slow", nil, nil) }()
	go func() { closedErr <- c.Call(context.Background(), "slow", nil, nil) }()
	require.Equal(t, "slow", p.next().Method)
	require.Equal(t, "slow", p.next().Method)
	capacity := fltPipeCapacity(t)
	// Half the pipe: a pipe wastes the tails of its pages on small writes,
	// so the writer can block before it has asked for the full capacity,
	// and a higher mark might never be reached.
	writeBlocked := tap.attemptedPast(tap.attempted.Load() + int64(capacity)/2)

	// Flood: the Conn writes far more than any pipe buffer holds, and the
	// peer reads nothing.
	flooder := make(chan struct{})
	go func() {
		defer close(flooder)
		pad := strings.Repeat("x", 1000)
		for i := 0; ; i++ {
			line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"pad":%q}}`+"\n", i, pad)
			if _, err := io.WriteString(p.w, line); err != nil {
				return // the Conn closed its input
			}
		}
	}()
	// Once the Conn has written half the pipe and the flood goes on with the
	// peer reading nothing, the writer is about to block for good.
	fltWait(t, ctx, writeBlocked, "the writer to block")

	cancelCall()
	select {
	case err := <-cancelledErr:
		require.ErrorIs(t, err, acprpc.ErrCancelled)
		require.ErrorIs(t, err, context.Canceled)
	case <-ctx.Done():
		require.FailNow(t, "a cancelled Call blocked behind a stuck writer")
	}
	require.NoError(t, c.Notify(ctx, "session/update", map[string]string{"sessionId": "s"}))
	require.GreaterOrEqual(t, c.Stats().CancelsSent, uint64(1))

	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	fltWait(t, ctx, closed, "Close to return")
	fltWait(t, ctx, flooder, "the flooding peer to be cut off")
	select {
	case err := <-closedErr:
		require.ErrorIs(t, err, acprpc.ErrConnClosed)
	case <-ctx.Done():
		require.FailNow(t, "a pending call did not return on Close")
	}
	fltSettled(t, ctx, c)
	require.ErrorIs(t, context.Cause(rec.ctx("block")), acprpc.ErrConnClosed)
	tap.requireNoDuplicates(t)
}

// fltPipeCapacity measures how many bytes an os.Pipe holds with nobody
// reading: a write with a deadline fills it and returns what it took.
func fltPipeCapacity(t *testing.T) int {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	require.NoError(t, w.SetWriteDeadline(time.Now().Add(200*time.Millisecond)))
	n, err := w.Write(make([]byte, 16<<20))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.Positive(t, n)
	return n
}

// fltFailAfter is an output that takes n bytes and then fails every write.
type fltFailAfter struct {
	w    io.WriteCloser
	left int
}

var errFltBrokenOutput = errors.New("output broken")

func (f *fltFailAfter) Write(p []byte) (int, error) {
	if len(p) <= f.left {
		f.left -= len(p)
		return f.w.Write(p)
	}
	n, _ := f.w.Write(p[:f.left])
	f.left = 0
	return n, errFltBrokenOutput
}

func (f *fltFailAfter) Close() error { return f.w.Close() }

// TestFaultsWriteFails: the output fails after n bytes, for several n, with
// calls pending, handlers running and answers going out.
func TestFaultsWriteFails(t *testing.T) {
	for _, n := range []int{0, 1, 60, 500, 4000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			fltNoLeak(t)
			ctx := fltContext(t)
			rec := fltNewRecorder()
			var blocking atomic.Int32
			h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
				if req.Method != "block" {
					return req.Params, nil
				}
				rec.start(ctx, req.Method+req.ID.String())
				blocking.Add(1)
				<-ctx.Done()
				return nil, context.Cause(ctx)
			})
			c, p, tap := fltConnect(t, context.Background(), h, nil,
				func(w io.WriteCloser) io.WriteCloser { return &fltFailAfter{w: w, left: n} })
			drained := make(chan struct{})
			go func() { _, _ = io.Copy(io.Discard, p.r); close(drained) }()

			const calls = 20
			errs := make(chan error, calls)
			for i := range calls {
				go func() { errs <- c.Call(context.Background(), "slow", map[string]int{"i": i}, nil) }()
			}
			// The Conn may already have closed its input: writes may fail.
			for i := range 10 {
				_, _ = io.WriteString(p.w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"block"}`+"\n", i))
			}
			for i := range 200 {
				if _, err := io.WriteString(p.w, fmt.Sprintf(`{"jsonrpc":"2.0","id":"e%d","method":"echo","params":[%d]}`+"\n", i, i)); err != nil {
					break
				}
			}
			fltWait(t, ctx, c.Done(), "the write failure to close the Conn")
			require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
			require.ErrorIs(t, c.Err(), errFltBrokenOutput)
			for range calls {
				select {
				case err := <-errs:
					require.ErrorIs(t, err, acprpc.ErrConnClosed)
				case <-ctx.Done():
					require.FailNow(t, "a pending call did not return")
				}
			}
			fltSettled(t, ctx, c)
			rec.requireCauses(t, acprpc.ErrConnClosed)
			p.kill()
			fltWait(t, ctx, drained, "the output to end")
			tap.requireNoDuplicates(t)
			require.ErrorIs(t, c.Call(ctx, "late", nil, nil), acprpc.ErrConnClosed)
			require.ErrorIs(t, c.Notify(ctx, "late", nil), acprpc.ErrConnClosed)
		})
	}
}

// TestFaultsParentContextEnds: the context given to NewConn ends while a
// call and a handler are in flight.
func TestFaultsParentContextEnds(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	parent, cancelParent := context.WithCancelCause(context.WithValue(context.Background(), fltKey{}, "v"))
	defer cancelParent(nil)
	rec := fltNewRecorder()
	started := make(chan struct{})
	var sawValue atomic.Bool
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		sawValue.Store(ctx.Value(fltKey{}) == "v")
		return rec.block(ctx, req.Method, started)
	})
	c, p, tap := fltConnect(t, parent, h, nil, nil)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	fltWait(t, ctx, started, "the handler")
	callErr := make(chan error, 1)
	go func() { callErr <- c.Call(context.Background(), "slow", nil, nil) }()
	require.Equal(t, "slow", p.next().Method)

	gone := errors.New("the editor quit")
	cancelParent(gone)
	fltWait(t, ctx, c.Done(), "the Conn to close")
	require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
	require.ErrorIs(t, c.Err(), gone)
	select {
	case err := <-callErr:
		require.ErrorIs(t, err, acprpc.ErrConnClosed)
	case <-ctx.Done():
		require.FailNow(t, "the pending call did not return")
	}
	fltSettled(t, ctx, c)
	require.True(t, sawValue.Load(), "handlers carry the parent's values")
	require.ErrorIs(t, context.Cause(rec.ctx("block")), acprpc.ErrConnClosed)
	require.NoError(t, c.Close())
	for _, m := range p.readToEOF() {
		require.True(t, m.isAnswer() && string(m.ID) == "1", "unexpected line %+v", m)
	}
	tap.requireNoDuplicates(t)
}

type fltKey struct{}

// TestFaultsParentContextAlreadyDone: a connection made with a context that
// has already ended closes at once, cleanly.
func TestFaultsParentContextAlreadyDone(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	for range 50 {
		parent, cancel := context.WithCancel(context.Background())
		cancel()
		c, p, _ := fltConnect(t, parent, nil, nil, nil)
		fltWait(t, ctx, c.Done(), "the Conn to close")
		require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
		require.ErrorIs(t, c.Err(), context.Canceled)
		require.NoError(t, c.Close())
		p.kill()
	}
}

// TestFaultsInputAlreadyEnded: the peer's input has ended before NewConn
// returns.
func TestFaultsInputAlreadyEnded(t *testing.T) {
	fltNoLeak(t)
	ctx := fltContext(t)
	for range 50 {
		inR, inW, err := os.Pipe()
		require.NoError(t, err)
		require.NoError(t, inW.Close())
		c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(inR, fltNopCloser{io.Discard}), nil, nil)
		fltWait(t, ctx, c.Done(), "the Conn to close")
		require.ErrorIs(t, c.Err(), io.EOF)
		require.NoError(t, c.Close())
	}
}

type fltNopCloser struct{ io.Writer }

func (fltNopCloser) Close() error { return nil }

// TestFaultsCloseRaces closes a connection at a random moment while both
// sides call, notify, cancel sessions and poll Stats, over and over.
func TestFaultsCloseRaces(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 6
	}
	for round := range rounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) { fltCloseRace(t, uint64(round)) })
	}
}

func fltCloseRace(t *testing.T, seed uint64) {
	fltNoLeak(t)
	ctx := fltContext(t)
	rng := rand.New(rand.NewPCG(seed, 99))

	// Handlers that are running when the connection closes must see
	// ErrConnClosed, or the session cancel that reached them first.
	var wrongCause atomic.Value
	serve := acprpc.HandlerFunc(func(hctx context.Context, req *acprpc.Request) (any, error) {
		if req.IsNotification() {
			return nil, nil
		}
		if req.Method == "echo" {
			return req.Params, nil
		}
		<-hctx.Done()
		cause := context.Cause(hctx)
		if !errors.Is(cause, acprpc.ErrConnClosed) && !errors.Is(cause, acprpc.ErrSessionCancelled) &&
			!errors.Is(cause, acprpc.ErrPeerCancelled) {
			wrongCause.Store(fmt.Sprintf("%s: %v", req.Method, cause))
		}
		return nil, cause
	})

	aIn, bOut, err := os.Pipe()
	require.NoError(t, err)
	bIn, aOut, err := os.Pipe()
	require.NoError(t, err)
	tapA, tapB := fltNewTap(aOut), fltNewTap(bOut)
	a := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(aIn, tapA), serve, nil)
	b := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(bIn, tapB), serve, nil)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var failures sync.Map
	check := func(what string, err error) {
		if err != nil && !errors.Is(err, acprpc.ErrConnClosed) && !errors.Is(err, acprpc.ErrCancelled) {
			failures.Store(what, err)
		}
	}
	loop := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f(i)
			}
		}()
	}
	// Every loop makes a round trip each time, so that none of them floods
	// the pipes: Notify and a cancelled Call only queue their lines.
	for _, conn := range []*acprpc.Conn{a, b} {
		echo := func(i int) { check("echo", conn.Call(ctx, "echo", []int{i}, nil)) }
		loop(echo)
		loop(func(i int) {
			cctx, cancel := context.WithCancel(ctx)
			go cancel()
			check("block", conn.Call(cctx, "block", map[string]string{"sessionId": fmt.Sprint("s", i%3)}, nil))
			echo(i)
		})
		loop(func(i int) {
			check("session", conn.Call(ctx, "session/prompt", map[string]string{"sessionId": fmt.Sprint("s", i%3)}, nil))
		})
		loop(func(i int) {
			check("notify", conn.Notify(ctx, "session/update", map[string]int{"i": i}))
			echo(i)
		})
		loop(func(i int) {
			check("cancel", conn.CancelSession(ctx, fmt.Sprint("s", i%3)))
			echo(i)
		})
		loop(func(i int) {
			_ = conn.Stats()
			echo(i)
		})
	}

	// Let some traffic through, then close one side at a random moment.
	victim := a
	if rng.IntN(2) == 1 {
		victim = b
	}
	for range rng.IntN(50) {
		require.NoError(t, a.Call(ctx, "echo", []int{0}, nil))
	}
	closed := make(chan struct{})
	go func() { _ = victim.Close(); close(closed) }()
	fltWait(t, ctx, closed, "Close to return")
	fltWait(t, ctx, a.Done(), "a to close")
	fltWait(t, ctx, b.Done(), "b to close (its peer's pipes closed)")
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	fltWait(t, ctx, done, "every operation to return")
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())

	failures.Range(func(k, v any) bool {
		assert.Failf(t, "an operation failed for the wrong reason", "%v: %v", k, v)
		return true
	})
	if w := wrongCause.Load(); w != nil {
		require.Fail(t, "a handler's context ended with the wrong cause", w)
	}
	tapA.requireNoDuplicates(t)
	tapB.requireNoDuplicates(t)
	require.ErrorIs(t, a.Err(), acprpc.ErrConnClosed)
	require.ErrorIs(t, b.Err(), acprpc.ErrConnClosed)
}
