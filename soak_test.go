package acprpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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
)

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
	soakErrCode      = 4242
	soakSessions     = 16
	soakGrace        = 30 * time.Millisecond
	soakMaxMessage   = 64 << 10
	soakBadEvery     = 400 // about one bad line per this many forwarded lines
	soakMarkerPrompt = `{"stopReason":"cancelled"}`
	soakMarkerPerm   = `{"outcome":{"outcome":"cancelled"}}`
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

	ab, ba := s.ledger[0].snapshot(), s.ledger[1].snapshot()
	var total soakCounts
	total.add(ab)
	total.add(ba)
	wire := func(i int) soakWireCounts { return s.wire[i].load() }
	t.Logf("soak report (%s, %d top-level requests, %d workers)", began.UTC().Format("2006-01-02"), n, s.workers)
	t.Logf("  requests on the wire   %d (client→agent %d, agent→client %d; bad lines injected %d, of which answerable %d)",
		total.requests, ab.requests, ba.requests, s.injected.Load(), total.injectedWithID+total.nullExpected)
	t.Logf("  cancels                $/cancel_request %d, session/cancel %d; notifications %d",
		wire(0).cancels+wire(1).cancels, wire(0).sessionCancels+wire(1).sessionCancels, wire(0).notes+wire(1).notes)
	t.Logf("  answers                %d: result %d, marker %d, -32800 %d, other errors %d %v",
		total.answers, total.results, total.markers, total.cancelled, total.otherErrors, total.codes())
	t.Logf("  null-id answers        %d (expected %d)", total.nullAnswers, total.nullExpected)
	t.Logf("  duplicates             %d", total.duplicates)
	t.Logf("  lost                   %d", total.lost)
	t.Logf("  stray answers          %d", total.stray)
	t.Logf("  wrong outcomes         %d", s.wrong.Load())
	t.Logf("  goroutines             start %d, end %d", goStart, goEnd)
	t.Logf("  heap                   start %.1f MiB, end %.1f MiB (in use after GC)",
		float64(memStart.HeapAlloc)/(1<<20), float64(memEnd.HeapAlloc)/(1<<20))
	t.Logf("  duration               %v", elapsed.Round(time.Millisecond))

	require.Zero(t, total.duplicates, "requests answered more than once: %v", total.examples)
	require.Zero(t, total.lost, "requests never answered: %v", total.examples)
	require.Zero(t, total.stray, "answers to no request: %v", total.examples)
	require.Equal(t, total.nullExpected, total.nullAnswers, "unreadable lines answered with a null ID")
	require.Zero(t, s.wrong.Load(), "calls with the wrong outcome: %v", s.wrongExamples())
	require.GreaterOrEqual(t, total.requests, n)
}

type soak struct {
	t       *testing.T
	a, b    *acprpc.Conn // client, agent
	workers int
	ctx     context.Context
	cancel  context.CancelFunc

	ledger   [2]*soakLedger // requests going client→agent, agent→client
	wire     [2]*soakWire   // what each relay saw go its way
	relays   sync.WaitGroup
	injected atomic.Int64
	active   atomic.Int64 // handlers running

	wrong   atomic.Int64
	wrongMu sync.Mutex
	wrongEx []string
}

func newSoak(t *testing.T) *soak {
	s := &soak{t: t, workers: 24}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.ledger = [2]*soakLedger{newSoakLedger(), newSoakLedger()}
	s.wire = [2]*soakWire{{}, {}}
	pipe := func() (*os.File, *os.File) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		return r, w
	}
	aInR, aInW := pipe()
	aOutR, aOutW := pipe()
	bInR, bInW := pipe()
	bOutR, bOutW := pipe()
	opts := func() *acprpc.Options {
		return &acprpc.Options{CancelGrace: soakGrace, MaxMessageSize: soakMaxMessage}
	}
	s.a = acprpc.NewConn(s.ctx, acprpc.NewStreamPipes(aInR, aOutW), acprpc.HandlerFunc(s.client), opts())
	s.b = acprpc.NewConn(s.ctx, acprpc.NewStreamPipes(bInR, bOutW), acprpc.HandlerFunc(s.agent), opts())
	s.relays.Add(2)
	go s.relay(0, aOutR, bInW, 1)
	go s.relay(1, bOutR, aInW, 2)
	t.Cleanup(func() {
		_ = s.a.Close()
		_ = s.b.Close()
		s.cancel()
	})
	return s
}

// agent serves the client's requests.
func (s *soak) agent(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		return nil, nil
	}
	s.active.Add(1)
	defer s.active.Add(-1)
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
	s.active.Add(1)
	defer s.active.Add(-1)
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
			timer := time.AfterFunc(cancelAfter, func() { _ = from.CancelSession(s.ctx, session) })
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

// settle waits until every request on the wire has been answered (answers
// to calls that returned on cancel may still be on their way) and every
// handler has returned, or reports what is missing.
func (s *soak) settle(t *testing.T) {
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.ledger[0].outstanding() > 0 || s.ledger[1].outstanding() > 0 || s.active.Load() > 0 {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Logf("soak: not settled: %d + %d requests unanswered, %d handlers running",
				s.ledger[0].outstanding(), s.ledger[1].outstanding(), s.active.Load())
			return // the report counts them as lost
		}
	}
}

func (s *soak) close(t *testing.T) {
	require.NoError(t, s.a.Close())
	require.NoError(t, s.b.Close())
	s.relays.Wait()
	s.cancel()
}

// relay copies lines from r to w, recording each, and slips in a bad line
// now and then. Requests going this way are recorded in ledger[dir], and
// answers going this way answer the requests of ledger[1-dir].
func (s *soak) relay(dir int, r io.ReadCloser, w io.WriteCloser, seed uint64) {
	defer s.relays.Done()
	defer w.Close()
	defer r.Close()
	rng := rand.New(rand.NewPCG(seed, 11))
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	reqs, answers, wire := s.ledger[dir], s.ledger[1-dir], s.wire[dir]
	var long []byte
	broken := false
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 && !broken {
			soakRecord(line, reqs, answers, wire)
			if rng.IntN(soakBadEvery) == 0 {
				bad := s.badLine(rng, reqs)
				if _, werr := bw.Write(bad); werr != nil {
					broken = true
				}
			}
			if _, werr := bw.Write(line); werr != nil {
				broken = true
			}
		}
		if br.Buffered() == 0 && !broken {
			if bw.Flush() != nil {
				broken = true
			}
		}
		if err != nil {
			return
		}
	}
}

// badLine returns a line that is not a usable message, and records the
// answer it is owed.
func (s *soak) badLine(rng *rand.Rand, reqs *soakLedger) []byte {
	k := s.injected.Add(1)
	switch rng.IntN(6) {
	case 0:
		reqs.expectNull()
		return []byte("this is not JSON\n")
	case 1:
		reqs.expectNull()
		return []byte(`[{"jsonrpc":"2.0","id":1,"method":"echo"}]` + "\n")
	case 2:
		id := fmt.Sprintf(`"bad-%d"`, k)
		reqs.request([]byte(id))
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":42}` + "\n")
	case 3:
		id := fmt.Sprintf(`"big-%d"`, k)
		reqs.request([]byte(id))
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

// soakWire counts the notifications that went one way.
type soakWire struct {
	cancels, sessionCancels, notes atomic.Int64
}

type soakWireCounts struct{ cancels, sessionCancels, notes int64 }

func (w *soakWire) load() soakWireCounts {
	return soakWireCounts{w.cancels.Load(), w.sessionCancels.Load(), w.notes.Load()}
}

var (
	soakHead   = []byte(`{"jsonrpc":"2.0",`)
	soakID     = []byte(`"id":`)
	soakMethod = []byte(`"method":"`)
	soakResult = []byte(`"result":`)
	soakError  = []byte(`"error":{"code":`)
)

// soakRecord classifies one line as the Conns write it, falling back on a
// full decode for anything unusual.
func soakRecord(line []byte, reqs, answers *soakLedger, wire *soakWire) {
	body := bytes.TrimRight(line, "\r\n")
	rest, ok := bytes.CutPrefix(body, soakHead)
	if !ok {
		soakRecordSlow(body, reqs, answers, wire)
		return
	}
	if m, ok := bytes.CutPrefix(rest, soakMethod); ok {
		method, _, _ := bytes.Cut(m, []byte(`"`))
		switch string(method) {
		case acprpc.MethodCancelRequest:
			wire.cancels.Add(1)
		case acprpc.MethodSessionCancel:
			wire.sessionCancels.Add(1)
		default:
			wire.notes.Add(1)
		}
		return
	}
	idAndRest, ok := bytes.CutPrefix(rest, soakID)
	if !ok {
		soakRecordSlow(body, reqs, answers, wire)
		return
	}
	comma := bytes.IndexByte(idAndRest, ',')
	if comma < 0 {
		soakRecordSlow(body, reqs, answers, wire)
		return
	}
	id, after := idAndRest[:comma], idAndRest[comma+1:]
	switch {
	case bytes.HasPrefix(after, soakMethod):
		reqs.request(id)
	case bytes.HasPrefix(after, soakResult):
		result := bytes.TrimSuffix(after[len(soakResult):], []byte("}"))
		answers.answer(id, soakKindOfResult(result), 0)
	case bytes.HasPrefix(after, soakError):
		num := after[len(soakError):]
		end := bytes.IndexAny(num, ",}")
		code, err := strconv.ParseInt(string(num[:max(end, 0)]), 10, 64)
		if err != nil {
			soakRecordSlow(body, reqs, answers, wire)
			return
		}
		answers.answer(id, soakKindOfError(code), code)
	default:
		soakRecordSlow(body, reqs, answers, wire)
	}
}

func soakRecordSlow(body []byte, reqs, answers *soakLedger, wire *soakWire) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *acprpc.Error   `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		answers.noteUnparsable(string(body))
		return
	}
	switch {
	case m.Method != nil && m.ID != nil:
		reqs.request(m.ID)
	case m.Method != nil:
		wire.notes.Add(1)
	case m.Error != nil:
		answers.answer(m.ID, soakKindOfError(m.Error.Code), m.Error.Code)
	default:
		answers.answer(m.ID, soakKindOfResult(m.Result), 0)
	}
}

const (
	soakKindResult = iota
	soakKindMarker
	soakKindCancelled
	soakKindOther
)

func soakKindOfResult(result []byte) int {
	if string(result) == soakMarkerPrompt || string(result) == soakMarkerPerm {
		return soakKindMarker
	}
	return soakKindResult
}

func soakKindOfError(code int64) int {
	if code == acprpc.CodeRequestCancelled {
		return soakKindCancelled
	}
	return soakKindOther
}

// soakLedger tracks the requests that went one way and their answers.
// Numeric IDs (the Conns') are kept in slices, anything else in a map.
type soakLedger struct {
	mu           sync.Mutex
	seen         []bool
	answered     []uint8
	other        map[string]int // -1 once requested, then answers counted from 0
	open         int
	c            soakCounts
	otherCodeMap map[int64]int
}

type soakCounts struct {
	requests, answers                         int
	results, markers, cancelled, otherErrors  int
	duplicates, lost, stray                   int
	nullAnswers, nullExpected, injectedWithID int
	codeCounts                                map[int64]int
	examples                                  []string
}

func newSoakLedger() *soakLedger {
	return &soakLedger{other: map[string]int{}, otherCodeMap: map[int64]int{}}
}

func (l *soakLedger) example(s string) {
	if len(l.c.examples) < 10 {
		l.c.examples = append(l.c.examples, s)
	}
}

func soakNumericID(id []byte) (int, bool) {
	n, err := strconv.Atoi(string(id))
	return n, err == nil && n > 0
}

func (l *soakLedger) request(id []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.requests++
	l.open++
	if n, ok := soakNumericID(id); ok {
		for len(l.seen) <= n {
			l.seen = append(l.seen, false)
			l.answered = append(l.answered, 0)
		}
		if l.seen[n] {
			l.example("request id reused: " + string(id))
		}
		l.seen[n] = true
		return
	}
	l.c.injectedWithID++
	l.other[string(id)] = 0
}

func (l *soakLedger) expectNull() {
	l.mu.Lock()
	l.c.nullExpected++
	l.mu.Unlock()
}

func (l *soakLedger) answer(id []byte, kind int, code int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.answers++
	switch kind {
	case soakKindResult:
		l.c.results++
	case soakKindMarker:
		l.c.markers++
	case soakKindCancelled:
		l.c.cancelled++
	default:
		l.c.otherErrors++
		l.otherCodeMap[code]++
	}
	if id == nil || string(id) == "null" {
		l.c.nullAnswers++
		return
	}
	if n, ok := soakNumericID(id); ok {
		switch {
		case n >= len(l.seen) || !l.seen[n]:
			l.c.stray++
			l.example("answer to no request: " + string(id))
		case l.answered[n] > 0:
			l.c.duplicates++
			l.example("answered again: " + string(id))
		default:
			l.open--
		}
		if n < len(l.answered) {
			l.answered[n]++
		}
		return
	}
	count, ok := l.other[string(id)]
	switch {
	case !ok:
		l.c.stray++
		l.example("answer to no request: " + string(id))
	case count > 0:
		l.c.duplicates++
		l.example("answered again: " + string(id))
	default:
		l.open--
	}
	l.other[string(id)] = count + 1
}

func (l *soakLedger) noteUnparsable(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.stray++
	l.example("unparsable line from a Conn: " + line)
}

func (l *soakLedger) outstanding() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// snapshot returns the counts, with every request still open counted lost.
func (l *soakLedger) snapshot() soakCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.c
	c.lost = 0
	for n, seen := range l.seen {
		if seen && l.answered[n] == 0 {
			c.lost++
			if len(c.examples) < 10 {
				c.examples = append(c.examples, fmt.Sprint("never answered: ", n))
			}
		}
	}
	for id, count := range l.other {
		if count == 0 {
			c.lost++
			if len(c.examples) < 10 {
				c.examples = append(c.examples, "never answered: "+id)
			}
		}
	}
	c.codeCounts = map[int64]int{}
	for k, v := range l.otherCodeMap {
		c.codeCounts[k] = v
	}
	c.examples = append([]string(nil), c.examples...)
	return c
}

func (c *soakCounts) add(o soakCounts) {
	c.requests += o.requests
	c.answers += o.answers
	c.results += o.results
	c.markers += o.markers
	c.cancelled += o.cancelled
	c.otherErrors += o.otherErrors
	c.duplicates += o.duplicates
	c.lost += o.lost
	c.stray += o.stray
	c.nullAnswers += o.nullAnswers
	c.nullExpected += o.nullExpected
	c.injectedWithID += o.injectedWithID
	if c.codeCounts == nil {
		c.codeCounts = map[int64]int{}
	}
	for k, v := range o.codeCounts {
		c.codeCounts[k] += v
	}
	c.examples = append(c.examples, o.examples...)
}

// codes lists the other errors by code.
func (c *soakCounts) codes() string {
	var parts []string
	for _, code := range []int64{acprpc.CodeParseError, acprpc.CodeInvalidRequest, acprpc.CodeMethodNotFound,
		acprpc.CodeInternalError, soakErrCode} {
		if n := c.codeCounts[code]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d: %d", code, n))
		}
	}
	known := 0
	for _, code := range []int64{acprpc.CodeParseError, acprpc.CodeInvalidRequest, acprpc.CodeMethodNotFound,
		acprpc.CodeInternalError, soakErrCode} {
		known += c.codeCounts[code]
	}
	if rest := c.otherErrors - known; rest > 0 {
		parts = append(parts, fmt.Sprintf("other: %d", rest))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
