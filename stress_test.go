package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	h.await(t, "every Call to return", called)
	h.settle(t)
	h.check(t, total)
}

// stressRig is a client and a server Conn over a Wire: every line either
// writes is in its ledger, the client's going AtoB.
type stressRig struct {
	wire           *wiretest.Wire
	client, server *acprpc.Conn
	started        sync.Map       // request n -> chan struct{} closed when its handler starts
	handlers       wiretest.Gauge // server handlers running
	lateCancels    atomic.Int64
}

func newStressRig(t *testing.T) *stressRig {
	h := &stressRig{}
	opts := &acprpc.Options{CancelGrace: 2 * time.Millisecond} // the grace timer races slow handlers
	h.wire = wiretest.NewWire(t, wiretest.Side{}, wiretest.Side{Handler: h.handlers.Track(h.serve), Options: opts})
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

// await waits for ch, failing with a goroutine dump if it takes over a
// minute.
func (h *stressRig) await(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wiretest.WaitFor(t, ctx, ch, what)
}

// must fails the test, with a goroutine dump, if a wait went wrong.
func (h *stressRig) must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("waiting for %s: %v; goroutines:\n%s", what, err, wiretest.Goroutines())
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
	calls := l.Calls(wiretest.AtoB)
	if calls.Requested < total/2 {
		t.Errorf("only %d of %d requests reached the wire", calls.Requested, total)
	}
	l.CheckExactlyOnce(t, wiretest.AtoB) // sent once, answered once, no answer to anything else
	for _, id := range calls.Precancel {
		t.Errorf("$/cancel_request for id %s before its request", id)
	}
	for _, id := range calls.Recancelled {
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
		calls.Requested, cancels, h.lateCancels.Load(), sent.Notifications[acprpc.MethodSessionCancel])
}
