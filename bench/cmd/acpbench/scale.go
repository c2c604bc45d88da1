package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/acpkit/acprpc/bench"
)

type scaleResult struct {
	Peer string `json:"peer"`
	N    int    `json:"n"`
	// Requests whose handler was running before the cancels, and the time
	// from the first call to the last handler starting.
	Blocked   int64   `json:"blocked"`
	BlockMs   float64 `json:"blockMs"`
	HeapPerRq float64 `json:"heapBytesPerRequest"`  // live heap after GC, both sides
	StackPerR float64 `json:"stackBytesPerRequest"` // goroutine stacks, both sides
	GorPerRq  float64 `json:"goroutinesPerRequest"` // including the caller's own
	// Handlers that saw their cancel, and the time from the first cancel
	// to the last handler seeing it.
	CancelSeen int64   `json:"cancelSeen"`
	AllSeenMs  float64 `json:"allSeenMs"`
	// Callers whose call had returned when the wait ended.
	Returned int64 `json:"returned"`
	// Whether a new call still succeeded on the connection afterwards.
	AliveAfter bool `json:"aliveAfter"`
	// Goroutines still running after the connection closed (polled for up
	// to 10 s), counted against the number before it was opened.
	LeftAfterClose int    `json:"goroutinesLeftAfterClose"`
	Error          string `json:"error,omitempty"`
}

func runScale(cfg *config, peers []string, sizes string, wait time.Duration) error {
	var results []scaleResult
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		for _, p := range peers {
			res, err := runFresh[scaleResult]("scale-one", p, n, wait)
			if err != nil {
				res = scaleResult{Peer: p, N: n, Error: err.Error()}
			}
			results = append(results, res)
		}
	}
	return writeResults(cfg, "scale", results, scaleTable(results))
}

func scaleOne(name string, n int, wait time.Duration) (scaleResult, error) {
	res := scaleResult{Peer: name, N: n}
	p, ok := bench.Lookup(name)
	if !ok {
		return res, fmt.Errorf("unknown peer %q", name)
	}
	if p.Cancel() == bench.CancelNone {
		return res, fmt.Errorf("peer %q has no cancellation", name)
	}
	g0 := runtime.NumGoroutine()
	wl := &bench.Workload{}
	l, err := bench.NewLink(p, wl, bench.LinkOptions{})
	if err != nil {
		return res, err
	}
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if _, err := l.Client.Prompt(ctx, "s1", bench.TextHello); err != nil {
			return res, err
		}
	}
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g1 := runtime.NumGoroutine()

	cancels := make([]context.CancelFunc, n)
	var returned sync.WaitGroup
	var nret = make(chan struct{}, n)
	start := time.Now()
	for i := range cancels {
		cctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		sid := "s" + strconv.Itoa(i) // coder's SDK keys prompts by session
		returned.Add(1)
		go func() {
			defer returned.Done()
			_, _ = l.Client.Prompt(cctx, sid, bench.TextBlock)
			nret <- struct{}{}
		}()
	}
	deadline := time.Now().Add(wait)
	for wl.Blocked.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	res.Blocked = wl.Blocked.Load()
	res.BlockMs = ms(time.Since(start))
	runtime.GC()
	runtime.ReadMemStats(&during)
	res.HeapPerRq = float64(int64(during.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
	res.StackPerR = float64(int64(during.StackInuse)-int64(before.StackInuse)) / float64(n)
	res.GorPerRq = float64(runtime.NumGoroutine()-g1) / float64(n)

	t0 := bench.Mono()
	for _, cancel := range cancels {
		cancel()
	}
	deadline = time.Now().Add(wait)
	for wl.CancelSeen.Load() < res.Blocked && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	res.CancelSeen = wl.CancelSeen.Load()
	if res.CancelSeen > 0 {
		res.AllSeenMs = float64(wl.LastCancel()-t0) / 1e6
	}
	done := make(chan struct{})
	go func() { returned.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
	}
	res.Returned = int64(len(nret))
	// A peer's Prompt may block past its context (a write into a pipe that
	// nobody reads), so the check runs aside and is abandoned after 5 s; the
	// streams are closed below, which releases it.
	alive := make(chan bool, 1)
	go func() {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		defer acancel()
		stop, err := l.Client.Prompt(actx, "s1", bench.TextHello)
		alive <- err == nil && stop == bench.StopEndTurn
	}()
	select {
	case res.AliveAfter = <-alive:
	case <-time.After(5 * time.Second):
	}

	if err := l.Close(); err != nil {
		res.Error = "close: " + err.Error()
	}
	deadline = time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	res.LeftAfterClose = runtime.NumGoroutine() - g0
	return res, nil
}

// runFresh runs one measurement of peer in a fresh process of this command,
// which keeps heap and goroutine counts clean, and reads its JSON result.
func runFresh[T any](sub, peer string, n int, wait time.Duration) (T, error) {
	var res T
	self, err := os.Executable()
	if err != nil {
		return res, err
	}
	out, err := exec.Command(self, sub, "-peer", peer, "-n", strconv.Itoa(n), "-wait", wait.String()).Output()
	if err == nil {
		err = json.Unmarshal(out, &res)
	}
	return res, err
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func scaleTable(results []scaleResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Scale: N session/prompt requests blocked in flight on one os.Pipe connection (one session each),\n")
	fmt.Fprintf(&b, "then every caller cancels. heap and stack are per in-flight request, both sides plus the caller's\n")
	fmt.Fprintf(&b, "own goroutine and context; \"seen\" counts handlers whose context fired; \"all seen\" is the time from\n")
	fmt.Fprintf(&b, "the first cancel to the last handler seeing it; \"left\" counts goroutines still running after close.\n")
	fmt.Fprintf(&b, "\"returned\" counts callers whose call had returned, \"alive\" whether a new call then succeeded.\n")
	fmt.Fprintf(&b, "\"vs acprpc\" divides heap per request by acprpc's at the same N.\n\n")
	fmt.Fprintf(&b, "%-12s %7s %8s %9s %10s %9s %10s %6s %8s %11s %8s %5s %5s\n", "peer", "N", "blocked", "block ms", "heap B/rq", "vs acprpc", "stack B/rq", "gor/rq", "seen", "all seen ms", "returned", "alive", "left")
	for _, r := range results {
		if r.Error != "" && r.Blocked == 0 {
			fmt.Fprintf(&b, "%-12s %7d error: %s\n", r.Peer, r.N, r.Error)
			continue
		}
		var ref *scaleResult
		for i := range results {
			if results[i].Peer == "acprpc" && results[i].N == r.N && results[i].Error == "" {
				ref = &results[i]
			}
		}
		alive := "no"
		if r.AliveAfter {
			alive = "yes"
		}
		fmt.Fprintf(&b, "%-12s %7d %8d %9.0f %10.0f %9s %10.0f %6.1f %8d %11.1f %8d %5s %5d\n", r.Peer, r.N, r.Blocked, r.BlockMs,
			r.HeapPerRq, ratio(r.HeapPerRq, ref, func(x *scaleResult) float64 { return x.HeapPerRq }),
			r.StackPerR, r.GorPerRq, r.CancelSeen, r.AllSeenMs, r.Returned, alive, r.LeftAfterClose)
		if r.Error != "" {
			fmt.Fprintf(&b, "%-12s %7s   note: %s\n", "", "", r.Error)
		}
	}
	return b.String()
}
