package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
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
	"github.com/acpkit/acprpc/internal/wiretest"
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
	called := make(chan struct{})
	go func() { wg.Wait(); close(called) }()
	waitCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wiretest.Recv(t, waitCtx, called) // every Call to return
	h.settle(t)
	h.check(t, total)
}

// stressRig is a client and a server Conn over a Wire: every line either
// writes is in its ledger, the client's going AtoB.
type stressRig struct {
	wire           *wiretest.Wire
	client, server *acprpc.Conn
	started        sync.Map          // request n -> chan struct{} closed when its handler starts
	handlers       wiretest.Recorder // server handlers running
	lateCancels    atomic.Int64
}

func newStressRig(t *testing.T) *stressRig {
	h := &stressRig{handlers: wiretest.Recorder{OnlyCount: true}}
	opts := &acprpc.Options{CancelGrace: 2 * time.Millisecond} // the grace timer races slow handlers
	h.wire = wiretest.NewWire(t, wiretest.Side{}, wiretest.Side{Handler: h.handlers.Track(h.serve), Options: opts}, wiretest.With{Tapped: true})
	h.client, h.server = h.wire.A, h.wire.B
	return h
}

func (h *stressRig) serve(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		return nil, nil // session/cancel and the wire's marks
	}
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
		if err := acprpc.CancelSession(context.Background(), h.client, p.SessionID); err != nil {
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

// must fails the test if a wait went wrong; a wait of the kit that timed
// out says so with every goroutine's stack.
func (h *stressRig) must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// settle waits until both sides have written everything and everything sent
// has been answered on the wire, and every handler has returned, then makes
// one more call: its answer follows every other on the pipe, so once it
// returns the client has read them all. The ledger records a line before it
// is written, so the final request and answer are in it by then; settling
// once more checks both sides again.
func (h *stressRig) settle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h.must(t, "every request to be answered", h.wire.Settle(ctx))
	h.must(t, "every handler to return", h.handlers.AwaitIdle(ctx))
	var res stressResult
	if err := h.client.Call(ctx, "stress/work", stressParams{N: -1}, &res); err != nil || res.N != -1 {
		t.Fatalf("final call: %+v, %v", res, err)
	}
	h.must(t, "the final answer", h.wire.Settle(ctx))
}

func (h *stressRig) check(t *testing.T, total int) {
	l := h.wire.Ledger
	sent, answered := l.Tally(wiretest.AtoB), l.Tally(wiretest.BtoA)
	for _, p := range append(sent.Problems, answered.Problems...) {
		t.Errorf("bad line on the wire: %s", p)
	}
	if sent.Requested < total/2 {
		t.Errorf("only %d of %d requests reached the wire", sent.Requested, total)
	}
	l.CheckExactlyOnce(t, wiretest.AtoB) // sent once, answered once, no answer to anything else
	for _, id := range sent.Precancel {
		t.Errorf("$/cancel_request for id %s before its request", id)
	}
	for _, id := range sent.Recancelled {
		t.Errorf("id %s: more than one $/cancel_request", id)
	}
	cancels := sent.Notifications[acprpc.MethodCancelRequest]
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
		sent.Requested, cancels, h.lateCancels.Load(), sent.Notifications["session/cancel"])
}

// The soak: two Conns over real pipes, a client (A) and an agent (B), with a
// relay in each direction that records every line and now and then slips in
// a bad one. Workers on both sides call with cancels at random moments (the
// caller's context, or the client's CancelSession), prompts cascade back
// into the client with the prompt's context, handlers panic and fail. An
// invariant checker counts, on the wire, every request and its answers: none
// may be answered twice, and none may go unanswered.
//
// The default run is CI-sized; the long one is
//
//	go test -run TestSoak -soak.requests=1000000 -timeout 60m .
//
// or ACPRPC_SOAK_REQUESTS=1000000 (scripts/soak.sh does this).

var soakRequests = flag.Int("soak.requests", 0, "top-level requests in TestSoak (default 20000, 4000 with -short; env ACPRPC_SOAK_REQUESTS)")

func soakCount(t *testing.T) int {
	n := *soakRequests
	if n == 0 {
		if env := os.Getenv("ACPRPC_SOAK_REQUESTS"); env != "" {
			v, err := strconv.Atoi(env)
			require.NoError(t, err, "ACPRPC_SOAK_REQUESTS")
			n = v
		}
	}
	if n == 0 {
		n = 20_000
		if testing.Short() {
			n = 4_000
		}
	}
	return n
}

// What a top-level request does.
const (
	soakEcho     = iota // a result, checked
	soakWork            // a short job, the caller cancels at a random moment
	soakWorkWait        // the same, waiting for the answer after the cancel
	soakIgnore          // a job that ignores its context: the grace period answers
	soakPrompt          // a prompt turn that calls back into the client; maybe CancelSession
	soakPanic           // -32603
	soakFail            // the handler's own error code
	soakUnknown         // -32601
	soakNumOps
)

var soakOpWeights = [soakNumOps]int{
	soakEcho: 35, soakWork: 15, soakWorkWait: 8, soakIgnore: 4, soakPrompt: 22,
	soakPanic: 5, soakFail: 6, soakUnknown: 5,
}

const (
	soakErrCode    = 4242
	soakSessions   = 16
	soakGrace      = 30 * time.Millisecond
	soakMaxMessage = 64 << 10
	soakBadEvery   = 400 // about one bad line per this many forwarded lines
)

func TestSoak(t *testing.T) {
	n := soakCount(t)
	runtime.GC()
	var memStart runtime.MemStats
	runtime.ReadMemStats(&memStart)
	goStart := runtime.NumGoroutine()
	began := time.Now()

	s := newSoak(t)
	s.run(t, n)
	s.settle(t)
	s.close(t)

	runtime.GC()
	var memEnd runtime.MemStats
	runtime.ReadMemStats(&memEnd)
	goEnd := runtime.NumGoroutine()
	elapsed := time.Since(began)

	l := s.wire.Ledger
	ab, ba := l.Tally(wiretest.AtoB), l.Tally(wiretest.BtoA)
	both := func(f func(wiretest.Tally) int) int { return f(ab) + f(ba) }
	note := func(method string) int { return ab.Notifications[method] + ba.Notifications[method] }
	requests := both(wiretest.Tally.RequestCount)
	answers := both(wiretest.Tally.Answers)
	markers := both(func(t wiretest.Tally) int { return t.Markers })
	results := both(func(t wiretest.Tally) int { return t.Results }) - markers
	cancelled := both(func(t wiretest.Tally) int { return t.Errors[acprpc.CodeRequestCancelled] })
	codes := map[int64]int{}
	for _, t := range []wiretest.Tally{ab, ba} {
		for code, k := range t.Errors {
			if code != acprpc.CodeRequestCancelled {
				codes[code] += k
			}
		}
	}
	cancels, sessionCancels := note(acprpc.MethodCancelRequest), note("session/cancel")
	notes := both(func(t wiretest.Tally) int { return sum(t.Notifications) }) - cancels - sessionCancels
	nullAnswers := both(func(t wiretest.Tally) int { return t.NullAnswers })
	nullExpected := int(s.nullExpected.Load())
	problems := append(ab.Problems, ba.Problems...)
	lost := both(func(t wiretest.Tally) int { return len(t.Unanswered) })
	dup := both(func(t wiretest.Tally) int { return len(t.Duplicated) })
	stray := both(func(t wiretest.Tally) int { return len(t.Stray) })
	resent := both(func(t wiretest.Tally) int { return len(t.Resent) })
	t.Logf("soak report (%s, %d top-level requests, %d workers)", began.UTC().Format("2006-01-02"), n, s.workers)
	t.Logf("  requests on the wire   %d (client→agent %d, agent→client %d; bad lines injected %d, of which answerable %d)",
		requests, ab.RequestCount(), ba.RequestCount(), s.injected.Load(), ab.Owed+ba.Owed+nullExpected)
	t.Logf("  cancels                $/cancel_request %d, session/cancel %d; notifications %d", cancels, sessionCancels, notes)
	t.Logf("  answers                %d: result %d, marker %d, -32800 %d, other errors %d %v",
		answers, results, markers, cancelled, sum(codes), codes)
	t.Logf("  null-id answers        %d (expected %d)", nullAnswers, nullExpected)
	t.Logf("  duplicates             %d", dup)
	t.Logf("  lost                   %d", lost)
	t.Logf("  stray answers          %d", stray)
	t.Logf("  bad lines from a Conn  %d", len(problems))
	t.Logf("  wrong outcomes         %d", s.wrong.Load())
	t.Logf("  goroutines             start %d, end %d", goStart, goEnd)
	t.Logf("  heap                   start %.1f MiB, end %.1f MiB (in use after GC)",
		float64(memStart.HeapAlloc)/(1<<20), float64(memEnd.HeapAlloc)/(1<<20))
	t.Logf("  duration               %v", elapsed.Round(time.Millisecond))

	require.Zero(t, dup, "requests answered more than once: %v %v", ab.Duplicated, ba.Duplicated)
	require.Zero(t, lost, "requests never answered: %v %v", ab.Unanswered, ba.Unanswered)
	require.Zero(t, stray, "answers to no request: %v %v", ab.Stray, ba.Stray)
	require.Zero(t, resent, "request IDs used twice: %v %v", ab.Resent, ba.Resent)
	require.Empty(t, problems, "lines from a Conn that are not valid messages")
	require.Equal(t, nullExpected, nullAnswers, "unreadable lines answered with a null ID")
	require.Zero(t, s.wrong.Load(), "calls with the wrong outcome: %v", s.wrongExamples())
	require.GreaterOrEqual(t, requests, n)
}

func sum[K comparable](m map[K]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

type soak struct {
	t       *testing.T
	wire    *wiretest.Wire
	a, b    *acprpc.Conn // client, agent
	workers int
	ctx     context.Context
	cancel  context.CancelFunc

	injected     atomic.Int64
	nullExpected atomic.Int64      // injected lines owed a null-ID answer
	active       wiretest.Recorder // handlers running

	wrong   atomic.Int64
	wrongMu sync.Mutex
	wrongEx []string
}

func newSoak(t *testing.T) *soak {
	s := &soak{t: t, workers: 24, active: wiretest.Recorder{OnlyCount: true}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	side := func(h acprpc.HandlerFunc, seed uint64) wiretest.Side {
		return wiretest.Side{
			Handler: s.active.Track(h),
			Options: &acprpc.Options{CancelGrace: soakGrace, MaxMessageSize: soakMaxMessage},
			Inject:  s.injector(seed),
		}
	}
	s.wire = wiretest.NewWire(t, side(s.client, 1), side(s.agent, 2), wiretest.With{Tapped: true})
	s.a, s.b = s.wire.A, s.wire.B
	t.Cleanup(s.cancel)
	return s
}

// agent serves the client's requests.
func (s *soak) agent(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		return nil, nil
	}
	switch req.Method {
	case "echo":
		return req.Params, nil
	case "work":
		return soakJob(ctx, req, true)
	case "ignore":
		return soakJob(ctx, req, false)
	case "panic":
		panic("soak: a handler panics")
	case "fail":
		return nil, &acprpc.Error{Code: soakErrCode, Message: "soak: the handler failed"}
	case "session/prompt":
		return s.prompt(ctx, req)
	}
	return nil, acprpc.MethodNotFound(req.Method)
}

// client serves the agent's requests: the cascade's callbacks and the
// agent's own calls.
func (s *soak) client(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		return nil, nil
	}
	switch req.Method {
	case "echo", "fs/read_text_file":
		return req.Params, nil
	case "work":
		return soakJob(ctx, req, true)
	case "session/request_permission":
		// The user thinks; a CancelSession here cancels the wait.
		if _, err := soakJob(ctx, req, true); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"allow"}}`), nil
	case "terminal/create":
		if _, err := soakJob(ctx, req, true); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"terminalId":"t"}`), nil
	}
	return nil, acprpc.MethodNotFound(req.Method)
}

type soakJobParams struct {
	Micros int `json:"us"`
}

// soakJob takes the number of microseconds in its params; it stops early
// when its context ends, if it listens.
func soakJob(ctx context.Context, req *acprpc.Request, listen bool) (any, error) {
	var p soakJobParams
	if err := req.DecodeParams(&p); err != nil {
		return nil, err
	}
	timer := time.NewTimer(time.Duration(p.Micros) * time.Microsecond)
	defer timer.Stop()
	done := ctx.Done()
	if !listen {
		done = nil
	}
	select {
	case <-timer.C:
		return json.RawMessage(`{"done":true}`), nil
	case <-done:
		return nil, context.Cause(ctx)
	}
}

// prompt is the agent's turn: an update, then calls back into the client
// with the turn's context, as ACP agents do.
func (s *soak) prompt(ctx context.Context, req *acprpc.Request) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		Micros    int    `json:"us"`
		Terminal  bool   `json:"terminal"`
	}
	if err := req.DecodeParams(&p); err != nil {
		return nil, err
	}
	conn := acprpc.ConnFromContext(ctx)
	_ = conn.Notify(ctx, "session/update", map[string]any{"sessionId": p.SessionID,
		"update": map[string]string{"sessionUpdate": "agent_message_chunk"}})
	args := map[string]any{"sessionId": p.SessionID, "us": p.Micros}
	var out json.RawMessage
	err := conn.Call(ctx, "session/request_permission", args, &out)
	if err == nil && p.Terminal {
		err = conn.Call(ctx, "terminal/create", args, &out)
	}
	if err == nil {
		err = conn.Call(ctx, "fs/read_text_file", map[string]string{"sessionId": p.SessionID, "path": "x"}, &out)
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx) // answered with the turn's marker
	}
	if err != nil {
		return nil, err
	}
	return map[string]string{"stopReason": "end_turn"}, nil
}

// run drives n top-level requests from workers on both sides.
func (s *soak) run(t *testing.T, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			from, to := s.a, s.b
			if w%6 == 5 { // a sixth of the workers are the agent calling the client
				from, to = s.b, s.a
			}
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				s.one(rng, from, to == s.b, int(i))
			}
		}()
	}
	wg.Wait()
}

// one makes one top-level request and checks its outcome.
func (s *soak) one(rng *rand.Rand, from *acprpc.Conn, toAgent bool, i int) {
	op := soakPick(rng)
	if !toAgent && (op == soakPrompt || op == soakIgnore || op == soakPanic || op == soakFail) {
		op = soakWork // the client serves only what an agent would call
	}
	us := rng.IntN(400)
	cancelAfter := time.Duration(rng.IntN(400)) * time.Microsecond
	ctx := s.ctx
	var cancel context.CancelFunc = func() {}
	if op == soakWork || op == soakWorkWait || op == soakIgnore {
		ctx, cancel = context.WithCancel(s.ctx)
		timer := time.AfterFunc(cancelAfter, cancel)
		defer timer.Stop()
	}
	defer cancel()

	switch op {
	case soakEcho:
		var out []int
		err := from.Call(ctx, "echo", []int{i, us}, &out)
		s.expect(err == nil && len(out) == 2 && out[0] == i && out[1] == us, "echo", err)
	case soakWork, soakWorkWait, soakIgnore:
		method := map[int]string{soakWork: "work", soakWorkWait: "work", soakIgnore: "ignore"}[op]
		var opts []acprpc.CallOption
		if op == soakWorkWait {
			opts = append(opts, acprpc.WaitAfterCancel(time.Second))
		}
		var out struct{ Done bool }
		err := from.Call(ctx, method, soakJobParams{Micros: us}, &out, opts...)
		s.expect((err == nil && out.Done) || errors.Is(err, acprpc.ErrCancelled), method, err)
	case soakPrompt:
		session := fmt.Sprint("sess_", rng.IntN(soakSessions))
		if rng.IntN(2) == 0 {
			timer := time.AfterFunc(cancelAfter, func() { _ = acprpc.CancelSession(s.ctx, from, session) })
			defer timer.Stop()
		}
		var out struct{ StopReason string }
		err := from.Call(ctx, "session/prompt", map[string]any{"sessionId": session, "us": us, "terminal": rng.IntN(2) == 0}, &out)
		s.expect(err == nil && (out.StopReason == "end_turn" || out.StopReason == "cancelled"), "session/prompt", err)
	case soakPanic, soakFail, soakUnknown:
		method := map[int]string{soakPanic: "panic", soakFail: "fail", soakUnknown: "no/such_method"}[op]
		want := map[int]int64{soakPanic: acprpc.CodeInternalError, soakFail: soakErrCode, soakUnknown: acprpc.CodeMethodNotFound}[op]
		err := from.Call(ctx, method, nil, nil)
		var rpcErr *acprpc.Error
		s.expect(errors.As(err, &rpcErr) && rpcErr.Code == want, method, err)
	}
}

func soakPick(rng *rand.Rand) int {
	total := 0
	for _, w := range soakOpWeights {
		total += w
	}
	r := rng.IntN(total)
	for op, w := range soakOpWeights {
		if r < w {
			return op
		}
		r -= w
	}
	return soakEcho
}

func (s *soak) expect(ok bool, what string, err error) {
	if ok {
		return
	}
	s.wrong.Add(1)
	s.wrongMu.Lock()
	if len(s.wrongEx) < 10 {
		s.wrongEx = append(s.wrongEx, fmt.Sprintf("%s: %v", what, err))
	}
	s.wrongMu.Unlock()
}

func (s *soak) wrongExamples() []string {
	s.wrongMu.Lock()
	defer s.wrongMu.Unlock()
	return append([]string(nil), s.wrongEx...)
}

// settle waits until each side has written all it queued, every request on
// the wire has been answered (answers to calls that returned on cancel may
// still be on their way) and every handler has returned, or reports what
// is missing. A handler that outlived its answer (the grace period) can
// make no call: its context has ended. So one more settle finds all.
func (s *soak) settle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.wire.Settle(ctx)
	if err == nil {
		err = s.active.AwaitIdle(ctx)
	}
	if err == nil {
		err = s.wire.Settle(ctx)
	}
	if err != nil {
		t.Logf("soak: not settled: %v; %d handlers running", err, s.active.Running())
		// the report counts what is missing as lost
	}
}

func (s *soak) close(t *testing.T) {
	require.NoError(t, s.a.Close())
	require.NoError(t, s.b.Close())
	s.cancel()
}

// injector returns what slips a bad line into one side's output about once
// in soakBadEvery lines, accounting in the ledger for the answer each owes.
// It runs on that side's writer only.
func (s *soak) injector(seed uint64) func(*wiretest.Ledger, wiretest.Direction) []byte {
	rng := rand.New(rand.NewPCG(seed, 11))
	return func(l *wiretest.Ledger, d wiretest.Direction) []byte {
		if rng.IntN(soakBadEvery) != 0 {
			return nil
		}
		return s.badLine(rng, l, d)
	}
}

// badLine returns a line that is not a usable message, and records the
// answer it is owed.
func (s *soak) badLine(rng *rand.Rand, l *wiretest.Ledger, d wiretest.Direction) []byte {
	k := s.injected.Add(1)
	switch rng.IntN(6) {
	case 0:
		s.nullExpected.Add(1)
		return []byte("this is not JSON\n")
	case 1:
		s.nullExpected.Add(1)
		return []byte(`[{"jsonrpc":"2.0","id":1,"method":"echo"}]` + "\n")
	case 2:
		id := fmt.Sprintf(`"bad-%d"`, k)
		l.Owe(d, id)
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":42}` + "\n")
	case 3:
		id := fmt.Sprintf(`"big-%d"`, k)
		l.Owe(d, id)
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":{"pad":"` +
			strings.Repeat("x", soakMaxMessage) + `"}}` + "\n")
	case 4:
		// A cancel for nothing in flight: ignored, never answered.
		return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"nope-%d"}}`+"\n", k))
	default:
		// A notification nobody serves: never answered either.
		return []byte(`{"jsonrpc":"2.0","method":"_soak/noise","params":{}}` + "\n")
	}
}
