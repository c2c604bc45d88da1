package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/acpkit/acprpc/bench"
)

type cancelResult struct {
	Row     string `json:"row"`
	Client  string `json:"client"`
	Server  string `json:"server"`
	N       int    `json:"n"`
	Lost    int    `json:"lost"`
	Skipped string `json:"skipped,omitempty"`
	// Microseconds after the caller cancelled: its call returned, the
	// server's handler saw the cancel, the answer reached the client.
	Return  latency `json:"return"`
	Handler latency `json:"handler"`
	Answer  latency `json:"answer"`
}

type latency struct {
	P50 float64 `json:"p50us"`
	P99 float64 `json:"p99us"`
}

const cancelWarmup = 20

func runCancel(cfg *config, n int) error {
	var results []cancelResult
	haveTS := tsAvailable(cfg)
	for _, r := range cfg.rows {
		res := cancelResult{Row: r.String(), Client: r.client, Server: r.server, N: n}
		switch {
		case usesTS(r) && !haveTS:
			res.Skipped = "node or ts/node_modules missing"
		case !cancels(r.client) || !cancels(r.server):
			res.Skipped = "no cancellation"
		}
		if res.Skipped != "" {
			results = append(results, res)
			continue
		}
		var ret, handler, answer []float64
		var err error
		if r.client == "ts" {
			ret, handler, answer, res.Lost, err = cancelTS(cfg, r, n)
		} else {
			ret, handler, answer, res.Lost, err = cancelGo(cfg, r, n)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		res.Return, res.Handler, res.Answer = percentiles(ret), percentiles(handler), percentiles(answer)
		results = append(results, res)
	}
	return writeResults(cfg, "cancel", results, cancelTable(results, n))
}

func cancels(name string) bool {
	if name == "ts" {
		return true
	}
	p, ok := bench.Lookup(name)
	return ok && p.Cancel() != bench.CancelNone
}

func cancelTS(cfg *config, r row, n int) (ret, handler, answer []float64, lost int, err error) {
	argv, err := serverCmd(cfg, r.server)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	var out struct {
		Ret, Handler, Answer []float64
		Lost                 int
	}
	if err := runTS(cfg, "cancel", n, argv, &out); err != nil {
		return nil, nil, nil, 0, err
	}
	return out.Ret, out.Handler, out.Answer, out.Lost, nil
}

func cancelGo(cfg *config, r row, n int) (ret, handler, answer []float64, lost int, err error) {
	argv, err := serverCmd(cfg, r.server)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	peer, _ := bench.Lookup(r.client)
	p, err := spawn(argv)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	answered := make(chan int64, 1024)
	mw := bench.NewMarkerWatch(func() { answered <- bench.MonoNow() })
	c := peer.Dial(&bench.TapReader{R: p.stdout, Tap: mw.Tap}, p.stdin, new(bench.Counter))
	defer func() {
		c.Close()
		if cerr := p.close(); err == nil && cerr != nil {
			err = fmt.Errorf("server: %w", cerr)
		}
	}()
	returned := make(chan int64, 1)
	const limit = 5 * time.Second
	for i := 0; i < n+cancelWarmup; i++ {
		drain(p.started, p.seen, answered)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			_, _ = c.Prompt(ctx, "s1", bench.TextBlock)
			returned <- bench.MonoNow()
		}()
		if _, ok := within(p.started, limit); !ok {
			cancel()
			return nil, nil, nil, 0, fmt.Errorf("server never started the blocking prompt")
		}
		t0 := bench.MonoNow()
		cancel()
		tRet, ok1 := within(returned, limit)
		tC, ok2 := within(p.seen, limit)
		tAns, ok3 := within(answered, limit)
		if !ok1 {
			return nil, nil, nil, 0, errors.New("the prompt call did not return after its cancel")
		}
		if !ok2 || !ok3 {
			lost++
			continue
		}
		if i < cancelWarmup {
			continue
		}
		ret = append(ret, float64(tRet-t0))
		handler = append(handler, float64(tC-t0))
		answer = append(answer, float64(tAns-t0))
	}
	return ret, handler, answer, lost, nil
}

func within(ch <-chan int64, d time.Duration) (int64, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v := <-ch:
		return v, true
	case <-t.C:
		return 0, false
	}
}

func drain(chs ...chan int64) {
	for _, ch := range chs {
		for len(ch) > 0 {
			<-ch
		}
	}
}

// percentiles reduces nanosecond samples to p50/p99 in microseconds.
func percentiles(ns []float64) latency {
	if len(ns) == 0 {
		return latency{}
	}
	s := append([]float64(nil), ns...)
	sort.Float64s(s)
	at := func(q float64) float64 {
		i := int(q * float64(len(s)-1))
		return s[i] / 1e3
	}
	return latency{P50: at(0.50), P99: at(0.99)}
}

func cancelTable(results []cancelResult, n int) string {
	var ref *cancelResult
	for i := range results {
		if results[i].Row == "acprpc" {
			ref = &results[i]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Cancel latency over stdio, %d cancellations per row, µs after the caller cancelled:\n", n)
	fmt.Fprintf(&b, "return = the caller's call returned; handler = the server's handler context fired;\n")
	fmt.Fprintf(&b, "answer = the marker / -32800 answer reached the client. \"vs acprpc\" divides answer p50 by acprpc's.\n\n")
	fmt.Fprintf(&b, "%-20s %9s %9s %9s %9s %9s %9s %9s %5s\n", "row", "ret p50", "ret p99", "hdl p50", "hdl p99", "ans p50", "ans p99", "vs acprpc", "lost")
	for _, r := range results {
		if r.Skipped != "" {
			fmt.Fprintf(&b, "%-20s skipped: %s\n", r.Row, r.Skipped)
			continue
		}
		fmt.Fprintf(&b, "%-20s %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9s %5d\n", r.Row,
			r.Return.P50, r.Return.P99, r.Handler.P50, r.Handler.P99, r.Answer.P50, r.Answer.P99,
			ratio(r.Answer.P50, ref, func(x *cancelResult) float64 { return x.Answer.P50 }), r.Lost)
	}
	return b.String()
}
