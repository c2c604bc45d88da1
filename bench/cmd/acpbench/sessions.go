package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc/bench"
)

// sessionsResult is one row of "sessions": N ACP sessions with a prompt
// each in flight on one os.Pipe connection, every turn then cancelled the
// ACP way.
type sessionsResult struct {
	Peer    string `json:"peer"`
	N       int    `json:"n"`
	Blocked int64  `json:"blocked"` // prompts whose handler was running before the cancels
	// How the client cancelled each turn: its context ending, and
	// session/cancel sent by the adapter ("client"), by the peer itself
	// ("peer") or not at all ("none").
	SessionCancel string `json:"sessionCancel"`
	// What reached the agent's input after the first cancel.
	CancelRequests int64 `json:"cancelRequestsReceived"`
	SessionCancels int64 `json:"sessionCancelsReceived"`
	// Cancelled answers (the marker or -32800) that reached the client,
	// and the time from the first cancel to the last of them.
	Answers      int64   `json:"cancelledAnswers"`
	AllAnswerMs  float64 `json:"allAnsweredMs"`
	SendMs       float64 `json:"cancelsSentMs"` // the time the client took to cancel every turn
	Returned     int64   `json:"returned"`      // callers whose Prompt had returned
	AliveAfter   bool    `json:"aliveAfter"`    // a new prompt then succeeded
	LeftAfterEnd int     `json:"goroutinesLeftAfterClose"`
	Error        string  `json:"error,omitempty"`
}

func runSessions(cfg *config, peers []string, n, runs int, wait time.Duration) error {
	var results []sessionsResult
	// Runs are interleaved peer by peer, so a change in the machine's load
	// falls on every peer alike; each run is a fresh process.
	for range runs {
		for _, p := range peers {
			res, err := runFresh[sessionsResult]("sessions-one", p, n, wait)
			if err != nil {
				res = sessionsResult{Peer: p, N: n, Error: err.Error()}
			}
			results = append(results, res)
		}
	}
	return writeResults(cfg, "sessions", results, sessionsTable(results, peers))
}

var (
	patternCancelRequest = []byte(`"$/cancel_request"`)
	patternSessionCancel = []byte(`"session/cancel"`)
)

func sessionsOne(name string, n int, wait time.Duration) (sessionsResult, error) {
	res := sessionsResult{Peer: name, N: n, SessionCancel: "none"}
	p, ok := bench.Lookup(name)
	if !ok {
		return res, fmt.Errorf("unknown peer %q", name)
	}
	if p.Cancel() == bench.CancelNone {
		return res, fmt.Errorf("peer %q has no cancellation", name)
	}
	if name == "coder" {
		res.SessionCancel = "peer" // its cancelled Prompt sends session/cancel itself
	}
	g0 := runtime.NumGoroutine()
	var counting atomic.Bool // counts only what follows the first cancel
	var cancelRequests, sessionCancels, answers atomic.Int64
	var lastAnswer atomic.Int64
	inbound := bench.NewPatternWatch(func() {
		if counting.Load() {
			cancelRequests.Add(1)
		}
	}, patternCancelRequest)
	inboundSession := bench.NewPatternWatch(func() {
		if counting.Load() {
			sessionCancels.Add(1)
		}
	}, patternSessionCancel)
	allAnswered := make(chan struct{})
	markers := bench.NewMarkerWatch(func() {
		lastAnswer.Store(bench.Mono())
		if answers.Add(1) == int64(n) {
			close(allAnswered)
		}
	})
	wl := &bench.Workload{}
	l, err := bench.NewLink(p, wl, bench.LinkOptions{
		Tap:       markers.Tap,
		ServerTap: func(b []byte) { inbound.Tap(b); inboundSession.Tap(b) },
	})
	if err != nil {
		return res, err
	}
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if _, err := l.Client.Prompt(ctx, "warm", bench.TextHello); err != nil {
			return res, err
		}
	}
	canceller, _ := l.Client.(bench.SessionCanceller)
	if canceller != nil {
		res.SessionCancel = "client"
	}

	cancels := make([]context.CancelFunc, n)
	sessions := make([]string, n)
	var returned sync.WaitGroup
	var nret atomic.Int64
	for i := range cancels {
		cctx, cancel := context.WithCancel(ctx)
		cancels[i], sessions[i] = cancel, "sess-"+strconv.Itoa(i)
		returned.Add(1)
		go func() {
			defer returned.Done()
			_, _ = l.Client.Prompt(cctx, sessions[i], bench.TextBlock)
			nret.Add(1)
		}()
	}
	deadline := time.Now().Add(wait)
	for wl.Blocked.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	res.Blocked = wl.Blocked.Load()

	counting.Store(true)
	t0 := bench.Mono()
	for i, cancel := range cancels {
		cancel()
		if canceller != nil {
			_ = canceller.CancelSession(ctx, sessions[i])
		}
	}
	res.SendMs = float64(bench.Mono()-t0) / 1e6
	select {
	case <-allAnswered:
	case <-time.After(wait):
	}
	res.Answers = answers.Load()
	if res.Answers > 0 {
		res.AllAnswerMs = float64(lastAnswer.Load()-t0) / 1e6
	}
	done := make(chan struct{})
	go func() { returned.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
	}
	res.Returned = nret.Load()
	// What the agent read is counted once the answers are back: every
	// cancel the client sent was written before the last answer could be.
	res.CancelRequests, res.SessionCancels = cancelRequests.Load(), sessionCancels.Load()
	res.AliveAfter = aliveAfter(l)
	if err := l.Close(); err != nil {
		res.Error = "close: " + err.Error()
	}
	deadline = time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	res.LeftAfterEnd = runtime.NumGoroutine() - g0
	return res, nil
}

// aliveAfter reports whether a new prompt still succeeds on l, giving up
// after 5 s: a peer's Prompt may block past its context on a pipe nobody
// reads, and the streams closed afterwards release it.
func aliveAfter(l *bench.Link) bool {
	alive := make(chan bool, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stop, err := l.Client.Prompt(ctx, "after", bench.TextHello)
		alive <- err == nil && stop == bench.StopEndTurn
	}()
	select {
	case ok := <-alive:
		return ok
	case <-time.After(5 * time.Second):
		return false
	}
}

func sessionsTable(results []sessionsResult, peers []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Sessions cancelled at once: N ACP sessions on one os.Pipe connection, each with a session/prompt\n")
	fmt.Fprintf(&b, "in flight; then the client cancels every turn the ACP way: the caller's context ends ($/cancel_request)\n")
	fmt.Fprintf(&b, "and session/cancel goes to its session (sent by the adapter: \"client\"; by the peer itself: \"peer\").\n")
	fmt.Fprintf(&b, "\"$/cancel\" and \"s/cancel\" count what reached the agent; \"answers\" the cancelled answers back at\n")
	fmt.Fprintf(&b, "the client, \"all answered\" the time from the first cancel to the last of them, \"sent\" the time\n")
	fmt.Fprintf(&b, "the client took to cancel them all. One line per run, runs interleaved; then the medians.\n\n")
	header := func() {
		fmt.Fprintf(&b, "%-12s %6s %8s %8s %9s %9s %8s %15s %8s %8s %5s %5s\n", "peer", "N", "blocked", "session", "$/cancel", "s/cancel", "answers", "all answered ms", "sent ms", "returned", "alive", "left")
	}
	header()
	for _, r := range results {
		if r.Error != "" && r.Blocked == 0 {
			fmt.Fprintf(&b, "%-12s %6d error: %s\n", r.Peer, r.N, r.Error)
			continue
		}
		alive := "no"
		if r.AliveAfter {
			alive = "yes"
		}
		fmt.Fprintf(&b, "%-12s %6d %8d %8s %9d %9d %8d %15.1f %8.1f %8d %5s %5d\n", r.Peer, r.N, r.Blocked, r.SessionCancel,
			r.CancelRequests, r.SessionCancels, r.Answers, r.AllAnswerMs, r.SendMs, r.Returned, alive, r.LeftAfterEnd)
		if r.Error != "" {
			fmt.Fprintf(&b, "%-12s %6s   note: %s\n", "", "", r.Error)
		}
	}
	fmt.Fprintf(&b, "\nmedians of the runs where every answer came back:\n")
	fmt.Fprintf(&b, "%-12s %5s %15s %8s %9s\n", "peer", "runs", "all answered ms", "sent ms", "$/cancel")
	for _, p := range peers {
		var all, sent, creq []float64
		for _, r := range results {
			if r.Peer == p && r.Answers == int64(r.N) {
				all, sent, creq = append(all, r.AllAnswerMs), append(sent, r.SendMs), append(creq, float64(r.CancelRequests))
			}
		}
		if len(all) == 0 {
			fmt.Fprintf(&b, "%-12s %5d %15s\n", p, 0, "–")
			continue
		}
		fmt.Fprintf(&b, "%-12s %5d %15.1f %8.1f %9.0f\n", p, len(all), median(all), median(sent), median(creq))
	}
	return b.String()
}
