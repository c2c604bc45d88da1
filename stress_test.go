package acprpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpkit/acprpc"
)

// TestStressCancellation drives thousands of requests between two Conns over
// real pipes, with many callers, handlers of every temper and cancels at
// every moment, and checks on the raw wire that every request sent got
// exactly one answer.

// What the serving side's handler does, chosen by the caller per request.
const (
	hsResult      = iota // answer at once
	hsError              // an *acprpc.Error of the handler's own code
	hsPlainErr           // a plain error: -32603
	hsPanic              // a panic: -32603
	hsSlow               // a result after a short delay, or the cancel's error if cancelled first
	hsIgnore             // a result after a short delay, ignoring the context
	hsBlock              // wait for the cancel, then return its cause
	hsBlockResult        // wait for the cancel, then return a partial result
	hsBlockIgnore        // wait for the cancel, ignore it a little longer, then fail
	stressNumHandlerModes
)

func stressBlocking(mode int) bool { return mode >= hsBlock }

// How the caller cancels.
const (
	csNone        = iota // never
	csRandom             // at a random moment: before the send, racing the answer, or after it
	csStarted            // once the handler has started, so always before the answer
	csStartedWait        // the same, then wait for the answer with WaitAfterCancel
	csSession            // CancelSession of the request's own session once its handler has started
	csAfter              // after the answer: a $/cancel_request for an ID already answered
	stressNumCallerModes
)

const stressErrCode = 4242

type stressParams struct {
	N         int    `json:"n"`
	Mode      int    `json:"mode"`
	SessionID string `json:"sessionId,omitempty"`
}

type stressResult struct {
	N          int             `json:"n"`
	ID         json.RawMessage `json:"id,omitempty"`
	Partial    bool            `json:"partial,omitempty"`
	StopReason string          `json:"stopReason,omitempty"`
}

func TestStressCancellation(t *testing.T) {
	total := 10_000
	if testing.Short() {
		total = 2_000
	}
	const callers = 64
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d requests, %d callers", seed, total, callers)

	h := newStressRig(t)
	var wg sync.WaitGroup
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for n := w; n < total; n += callers {
				h.oneCall(t, rng, n)
			}
		}()
	}
	h.await(t, "every Call to return", func() bool { wg.Wait(); return true })
	h.settle(t)
	h.check(t, total)
}

// stressRig is a client and a server Conn over two os.Pipes, with a tap on
// each side's output.
type stressRig struct {
	client, server *acprpc.Conn
	sent, answered *stressLedger // the client's and the server's output
	started        sync.Map      // request n -> chan struct{} closed when its handler starts
	handlers       stressGauge   // server handlers running
	lateCancels    atomic.Int64
}

func newStressRig(t *testing.T) *stressRig {
	h := &stressRig{sent: newStressLedger(), answered: newStressLedger()}
	c2sR, c2sW := stressPipe(t)
	s2cR, s2cW := stressPipe(t)
	opts := &acprpc.Options{CancelGrace: 2 * time.Millisecond} // the grace timer races slow handlers
	h.server = acprpc.NewConn(context.Background(),
		acprpc.NewStreamPipes(c2sR, &stressTap{w: s2cW, l: h.answered}), acprpc.HandlerFunc(h.serve), opts)
	h.client = acprpc.NewConn(context.Background(),
		acprpc.NewStreamPipes(s2cR, &stressTap{w: c2sW, l: h.sent}), nil, nil)
	t.Cleanup(func() {
		h.client.Close()
		h.server.Close()
	})
	return h
}

func stressPipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

func (h *stressRig) serve(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		return nil, nil // session/cancel and the final mark
	}
	h.handlers.add(1)
	defer h.handlers.add(-1)
	var p stressParams
	if err := req.DecodeParams(&p); err != nil {
		return nil, err
	}
	if ch, ok := h.started.LoadAndDelete(p.N); ok {
		close(ch.(chan struct{}))
	}
	res := stressResult{N: p.N, ID: json.RawMessage(req.ID.String())}
	switch p.Mode {
	case hsError:
		return nil, acprpc.NewError(stressErrCode, fmt.Sprintf("failure %d", p.N))
	case hsPlainErr:
		return nil, fmt.Errorf("plain failure %d", p.N)
	case hsPanic:
		panic(fmt.Sprintf("panic %d", p.N))
	case hsSlow:
		if !stressWait(ctx, stressJitter(p.N, 300*time.Microsecond)) {
			return nil, context.Cause(ctx)
		}
	case hsIgnore:
		stressWait(context.Background(), stressJitter(p.N, 3*time.Millisecond))
	case hsBlock:
		<-ctx.Done()
		return nil, context.Cause(ctx)
	case hsBlockResult:
		<-ctx.Done()
		res.Partial = true
	case hsBlockIgnore:
		<-ctx.Done()
		stressWait(context.Background(), stressJitter(p.N, 4*time.Millisecond))
		return nil, errors.New("gave up late")
	}
	return res, nil
}

// stressJitter is a delay below max that varies with n.
func stressJitter(n int, max time.Duration) time.Duration {
	return time.Duration(uint64(n)*2654435761%uint64(max/time.Microsecond)) * time.Microsecond
}

// stressWait waits d, or less if ctx ends first; it reports whether d passed.
func stressWait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// oneCall makes request n with a random handler mode and cancellation, and
// checks what Call returned.
func (h *stressRig) oneCall(t *testing.T, rng *rand.Rand, n int) {
	cmode := rng.IntN(stressNumCallerModes)
	hmode := rng.IntN(stressNumHandlerModes)
	if stressBlocking(hmode) && (cmode == csNone || cmode == csAfter) {
		cmode = csStarted + rng.IntN(3) // something must end the handler
	}
	if (cmode == csStarted || cmode == csStartedWait || cmode == csSession) && !stressBlocking(hmode) {
		hmode = hsBlock + rng.IntN(3) // so that the cancel comes before the answer
	}
	p := stressParams{N: n, Mode: hmode}
	var res stressResult
	var err error
	switch cmode {
	case csNone, csAfter:
		err = h.client.Call(context.Background(), "stress/work", p, &res)
		h.checkPlain(t, p, res, err)
		if cmode == csAfter && err == nil {
			h.cancelAnswered(t, res.ID)
		}
	case csRandom:
		h.callRandomCancel(t, rng, p)
	case csStarted, csStartedWait:
		h.callStartedCancel(t, p, cmode == csStartedWait)
	case csSession:
		h.callSessionCancel(t, p)
	}
}

// checkPlain checks the answer of a call that was not cancelled.
func (h *stressRig) checkPlain(t *testing.T, p stressParams, res stressResult, err error) {
	var rpcErr *acprpc.Error
	switch p.Mode {
	case hsResult, hsSlow, hsIgnore:
		if err != nil || res.N != p.N {
			t.Errorf("request %d (mode %d): got %+v, %v; want its result", p.N, p.Mode, res, err)
		}
	case hsError:
		if !errors.As(err, &rpcErr) || rpcErr.Code != stressErrCode {
			t.Errorf("request %d: got %v, want error %d", p.N, err, stressErrCode)
		}
	case hsPlainErr, hsPanic:
		if !errors.As(err, &rpcErr) || rpcErr.Code != acprpc.CodeInternalError {
			t.Errorf("request %d (mode %d): got %v, want -32603", p.N, p.Mode, err)
		}
	}
}

// cancelAnswered sends $/cancel_request for a request already answered; the
// server must ignore it.
func (h *stressRig) cancelAnswered(t *testing.T, id json.RawMessage) {
	h.lateCancels.Add(1)
	params := json.RawMessage(`{"requestId":` + string(id) + `}`)
	if err := h.client.Notify(context.Background(), acprpc.MethodCancelRequest, params); err != nil {
		t.Errorf("late cancel: %v", err)
	}
}

func (h *stressRig) callRandomCancel(t *testing.T, rng *rand.Rand, p stressParams) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := time.AfterFunc(time.Duration(rng.IntN(400))*time.Microsecond, cancel)
	defer timer.Stop()
	var opts []acprpc.CallOption
	wait := rng.IntN(2) == 0
	if wait {
		opts = append(opts, acprpc.WaitAfterCancel(time.Minute))
	}
	var res stressResult
	err := h.client.Call(ctx, "stress/work", p, &res, opts...)
	var callErr *acprpc.CallError
	var rpcErr *acprpc.Error
	switch {
	case err == nil:
		if res.N != p.N {
			t.Errorf("request %d: result for %d", p.N, res.N)
		}
	case errors.As(err, &rpcErr):
		// an error answer: the handler's own, or the cancelled one
	case !errors.Is(err, acprpc.ErrCancelled) || !errors.Is(err, context.Canceled):
		t.Errorf("request %d (mode %d): unexpected error %v", p.N, p.Mode, err)
	case wait && errors.As(err, &callErr) && !callErr.ID.IsZero():
		t.Errorf("request %d was sent and waited for, yet returned with no answer: %v", p.N, err)
	}
}

// startedSignal returns a channel closed when request n's handler starts.
func (h *stressRig) startedSignal(n int) chan struct{} {
	ch := make(chan struct{})
	h.started.Store(n, ch)
	return ch
}

func (h *stressRig) callStartedCancel(t *testing.T, p stressParams, wait bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := h.startedSignal(p.N)
	go func() {
		select {
		case <-started:
		case <-ctx.Done(): // Call returned first: only on failure
		}
		cancel()
	}()
	var opts []acprpc.CallOption
	if wait {
		opts = append(opts, acprpc.WaitAfterCancel(time.Minute))
	}
	var res stressResult
	err := h.client.Call(ctx, "stress/work", p, &res, opts...)
	var rpcErr *acprpc.Error
	switch {
	case !errors.Is(err, acprpc.ErrCancelled) && !(wait && err == nil):
		t.Errorf("request %d (mode %d) cancelled before its answer: got %v", p.N, p.Mode, err)
	case wait && err == nil && !res.Partial:
		t.Errorf("request %d: got %+v after the cancel, want the partial result", p.N, res)
	case wait && err != nil && (!errors.As(err, &rpcErr) || rpcErr.Code != acprpc.CodeRequestCancelled):
		t.Errorf("request %d: got %v after the cancel, want -32800", p.N, err)
	}
}

func (h *stressRig) callSessionCancel(t *testing.T, p stressParams) {
	p.SessionID = fmt.Sprintf("sess-%d", p.N)
	started := h.startedSignal(p.N)
	done, callDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-started:
		case <-callDone: // Call returned first: only on failure
			return
		}
		if err := h.client.CancelSession(context.Background(), p.SessionID); err != nil {
			t.Errorf("CancelSession: %v", err)
		}
	}()
	var res stressResult
	err := h.client.Call(context.Background(), "session/prompt", p, &res)
	close(callDone)
	<-done
	if err != nil || !(res.StopReason == "cancelled" || res.Partial) {
		t.Errorf("prompt %d (mode %d) after session cancel: got %+v, %v; want the marker", p.N, p.Mode, res, err)
	}
}

// await runs wait, failing with a goroutine dump if it takes over a minute.
func (h *stressRig) await(t *testing.T, what string, wait func() bool) {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- wait() }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatalf("gave up waiting for %s", what)
		}
	case <-time.After(time.Minute):
		var b strings.Builder
		pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Fatalf("timed out waiting for %s; goroutines:\n%s", what, b.String())
	}
}

// settle waits until everything sent has been answered on the wire and every
// handler has returned, then makes one more call: its answer follows every
// other on the pipe, so once it returns the client has read them all.
func (h *stressRig) settle(t *testing.T) {
	h.flushClient(t, 1)
	h.await(t, "every request to be answered", func() bool {
		return h.answered.waitFor(func(a *stressLedger) bool { return h.sent.allAnsweredIn(a) })
	})
	h.await(t, "every handler to return", func() bool { return h.handlers.waitZero() })
	var res stressResult
	if err := h.client.Call(context.Background(), "stress/work", stressParams{N: -1}, &res); err != nil || res.N != -1 {
		t.Fatalf("final call: %+v, %v", res, err)
	}
	h.flushClient(t, 2) // the tap records a line after writing it, so maybe after its answer came back
}

// flushClient sends the k-th mark and waits for the client's tap to record
// it, and so everything the client wrote before it.
func (h *stressRig) flushClient(t *testing.T, k int) {
	if err := h.client.Notify(context.Background(), "stress/mark", nil); err != nil {
		t.Fatal(err)
	}
	h.await(t, "the client's output to be written", func() bool {
		return h.sent.waitFor(func(l *stressLedger) bool { return l.marks >= k })
	})
}

func (h *stressRig) check(t *testing.T, total int) {
	sent, answered := h.sent.snapshot(), h.answered.snapshot()
	for _, p := range append(sent.problems, answered.problems...) {
		t.Error(p)
	}
	if len(sent.requests) < total/2 {
		t.Errorf("only %d of %d requests reached the wire", len(sent.requests), total)
	}
	for id, n := range sent.requests {
		if n != 1 {
			t.Errorf("request id %s sent %d times", id, n)
		}
		if a := answered.answers[id]; a != 1 {
			t.Errorf("request id %s answered %d times", id, a)
		}
	}
	for id := range answered.answers {
		if sent.requests[id] == 0 {
			t.Errorf("answer for id %s, which was never sent", id)
		}
	}
	var cancels int
	for id, n := range sent.cancels {
		cancels += n
		if sent.requests[id] == 0 || n != 1 {
			t.Errorf("id %s: %d $/cancel_request for a request sent %d times", id, n, sent.requests[id])
		}
	}
	cs, ss := h.client.Stats(), h.server.Stats()
	if cs.OutgoingInFlight != 0 || cs.IncomingInFlight != 0 || ss.IncomingInFlight != 0 || ss.OutgoingInFlight != 0 {
		t.Errorf("in flight at the end: client %+v, server %+v", cs, ss)
	}
	if want := uint64(cancels) - uint64(h.lateCancels.Load()); cs.CancelsSent != want {
		t.Errorf("client counted %d cancels sent, the wire shows %d from Call", cs.CancelsSent, want)
	}
	if ss.CancelsReceived != uint64(cancels) {
		t.Errorf("server counted %d cancels received, the wire shows %d", ss.CancelsReceived, cancels)
	}
	t.Logf("%d requests on the wire, %d $/cancel_request (%d after the answer), %d session cancels",
		len(sent.requests), cancels, h.lateCancels.Load(), sent.sessionCancels)
}

// stressTap writes to w, then shows each complete line to l, so a line the stressLedger
// has seen is already in the pipe.
type stressTap struct {
	w       io.WriteCloser
	l       *stressLedger
	mu      sync.Mutex
	partial []byte
}

func (t *stressTap) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p[:n]...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.l.record(t.partial[:i])
		t.partial = t.partial[i+1:]
	}
	t.partial = append([]byte(nil), t.partial...)
	return n, err
}

func (t *stressTap) Close() error { return t.w.Close() }

// stressLedger counts what one side wrote, by message ID.
type stressLedger struct {
	mu             sync.Mutex
	requests       map[string]int // request ID -> times sent
	answers        map[string]int // answered ID -> times answered
	cancels        map[string]int // requestId -> $/cancel_request sent
	sessionCancels int
	marks          int
	problems       []string
	changed        chan struct{}
}

func newStressLedger() *stressLedger {
	return &stressLedger{requests: map[string]int{}, answers: map[string]int{}, cancels: map[string]int{},
		changed: make(chan struct{})}
}

type stressLine struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

func (l *stressLedger) record(line []byte) {
	var m stressLine
	err := json.Unmarshal(line, &m)
	l.mu.Lock()
	defer l.mu.Unlock()
	defer func() { close(l.changed); l.changed = make(chan struct{}) }()
	switch {
	case err != nil || m.JSONRPC != "2.0":
		l.problems = append(l.problems, fmt.Sprintf("bad line on the wire: %q", line))
	case m.Method == nil && (m.Result == nil) == (m.Error == nil):
		l.problems = append(l.problems, fmt.Sprintf("answer without exactly one of result and error: %q", line))
	case m.Method == nil:
		l.answers[string(m.ID)]++
	case m.ID != nil:
		l.requests[string(m.ID)]++
	default:
		l.notification(*m.Method, m.Params)
	}
}

func (l *stressLedger) notification(method string, params json.RawMessage) {
	switch method {
	case acprpc.MethodCancelRequest:
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(params, &p)
		id := string(p.RequestID)
		if l.requests[id] == 0 {
			l.problems = append(l.problems, "$/cancel_request before its request: "+string(params))
		}
		l.cancels[id]++
	case acprpc.MethodSessionCancel:
		l.sessionCancels++
	case "stress/mark":
		l.marks++
	}
}

// waitFor waits until cond holds, checking after each line recorded.
func (l *stressLedger) waitFor(cond func(*stressLedger) bool) bool {
	for {
		l.mu.Lock()
		ok, changed := cond(l), l.changed
		l.mu.Unlock()
		if ok {
			return true
		}
		<-changed
	}
}

// allAnsweredIn reports whether every request in l has an answer in a; a's
// lock is held.
func (l *stressLedger) allAnsweredIn(a *stressLedger) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.requests {
		if a.answers[id] == 0 {
			return false
		}
	}
	return true
}

func (l *stressLedger) snapshot() *stressLedger {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &stressLedger{requests: map[string]int{}, answers: map[string]int{}, cancels: map[string]int{},
		sessionCancels: l.sessionCancels, marks: l.marks, problems: append([]string(nil), l.problems...)}
	for k, v := range l.requests {
		s.requests[k] = v
	}
	for k, v := range l.answers {
		s.answers[k] = v
	}
	for k, v := range l.cancels {
		s.cancels[k] = v
	}
	return s
}

// stressGauge is a counter whose return to zero can be awaited.
type stressGauge struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

func (g *stressGauge) add(d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n += d
	if g.n == 0 && g.zero != nil {
		close(g.zero)
		g.zero = nil
	}
}

func (g *stressGauge) waitZero() bool {
	g.mu.Lock()
	if g.n == 0 {
		g.mu.Unlock()
		return true
	}
	if g.zero == nil {
		g.zero = make(chan struct{})
	}
	ch := g.zero
	g.mu.Unlock()
	<-ch
	return true
}
