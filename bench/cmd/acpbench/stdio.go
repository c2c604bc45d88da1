package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc/bench"
)

type stdioResult struct {
	Row     string    `json:"row"`
	Client  string    `json:"client"`
	Server  string    `json:"server"`
	Calls   int       `json:"calls"`
	SeqCPS  []float64 `json:"seqCallsPerSec"`
	Par8CPS []float64 `json:"par8CallsPerSec"`
	SeqMed  float64   `json:"seqMedian"`
	Par8Med float64   `json:"par8Median"`
	// CPU µs per sequential call, user and system, of each process; -1
	// where it could not be read (the TypeScript client's runs).
	SeqClientCPU    []float64 `json:"seqClientCpuUs"`
	SeqServerCPU    []float64 `json:"seqServerCpuUs"`
	SeqClientCPUMed float64   `json:"seqClientCpuUsMedian"`
	SeqServerCPUMed float64   `json:"seqServerCpuUsMedian"`
	// The same with 8 callers.
	Par8ClientCPU    []float64 `json:"par8ClientCpuUs"`
	Par8ServerCPU    []float64 `json:"par8ServerCpuUs"`
	Par8ClientCPUMed float64   `json:"par8ClientCpuUsMedian"`
	Par8ServerCPUMed float64   `json:"par8ServerCpuUsMedian"`
	Skipped          string    `json:"skipped,omitempty"`
}

// stdioRun is what one run of a row measures.
type stdioRun struct {
	seq, par                   float64 // calls per second
	seqClientCPU, seqServerCPU float64 // CPU µs per sequential call
	parClientCPU, parServerCPU float64 // CPU µs per call with 8 callers
}

func runStdio(cfg *config, calls, runs int, prof profiler) error {
	var results []stdioResult
	haveTS := tsAvailable(cfg)
	for _, r := range cfg.rows {
		res := stdioResult{Row: r.String(), Client: r.client, Server: r.server, Calls: calls}
		if usesTS(r) && !haveTS {
			res.Skipped = "node or ts/node_modules missing"
			results = append(results, res)
			continue
		}
		for i := 0; i < runs; i++ {
			run, err := stdioOnce(cfg, r, calls, prof)
			if err != nil {
				return fmt.Errorf("%s: %w", r, err)
			}
			res.SeqCPS = append(res.SeqCPS, run.seq)
			res.Par8CPS = append(res.Par8CPS, run.par)
			res.SeqClientCPU = append(res.SeqClientCPU, run.seqClientCPU)
			res.SeqServerCPU = append(res.SeqServerCPU, run.seqServerCPU)
			res.Par8ClientCPU = append(res.Par8ClientCPU, run.parClientCPU)
			res.Par8ServerCPU = append(res.Par8ServerCPU, run.parServerCPU)
		}
		res.SeqMed, res.Par8Med = median(res.SeqCPS), median(res.Par8CPS)
		res.SeqClientCPUMed, res.SeqServerCPUMed = median(res.SeqClientCPU), median(res.SeqServerCPU)
		res.Par8ClientCPUMed, res.Par8ServerCPUMed = median(res.Par8ClientCPU), median(res.Par8ServerCPU)
		results = append(results, res)
	}
	return writeResults(cfg, "stdio", results, stdioTable(results, runs, calls))
}

// stdioOnce runs one row in a fresh server process and returns calls per
// second, sequential and with 8 concurrent callers, and what the sequential
// calls cost each side in CPU time.
func stdioOnce(cfg *config, r row, calls int, prof profiler) (run stdioRun, err error) {
	argv, err := serverCmd(cfg, r.server)
	if err != nil {
		return run, err
	}
	if prof.on() && r.server != "ts" {
		argv = append(argv, prof.serverArgs(r)...)
	}
	if r.client == "ts" {
		var out struct {
			SeqNs  float64 `json:"seqNs"`
			Par8Ns float64 `json:"par8Ns"`
		}
		if err := runTS(cfg, "throughput", calls, argv, &out); err != nil {
			return run, err
		}
		return stdioRun{seq: float64(calls) / (out.SeqNs / 1e9), par: float64(calls) / (out.Par8Ns / 1e9),
			seqClientCPU: -1, seqServerCPU: -1, parClientCPU: -1, parServerCPU: -1}, nil
	}
	peer, ok := bench.Lookup(r.client)
	if !ok {
		return run, fmt.Errorf("unknown peer %q", r.client)
	}
	p, err := spawn(argv)
	if err != nil {
		return run, err
	}
	c := peer.Dial(p.stdout, p.stdin, new(bench.Counter))
	defer func() {
		c.Close()
		if cerr := p.close(); err == nil && cerr != nil {
			err = fmt.Errorf("server: %w", cerr)
		}
	}()
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		if _, err := c.Prompt(ctx, "s1", bench.TextHello); err != nil {
			return run, err
		}
	}
	stopProfile := func() error { return nil }
	if prof.on() {
		if stopProfile, err = prof.start(r); err != nil {
			return run, err
		}
	}
	cpu := startCPU(p.cmd.Process.Pid)
	t := time.Now()
	for i := 0; i < calls; i++ {
		if _, err := c.Prompt(ctx, "s1", bench.TextHello); err != nil {
			return run, errors.Join(err, stopProfile())
		}
	}
	run.seq = float64(calls) / time.Since(t).Seconds()
	run.seqClientCPU, run.seqServerCPU = cpu.perCall(calls)
	if err := stopProfile(); err != nil || prof.on() || prof.seqOnly {
		return run, err
	}

	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	cpu = startCPU(p.cmd.Process.Pid)
	t = time.Now()
	for w := 0; w < 8; w++ {
		sid := fmt.Sprintf("s%d", w+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(calls) {
				if _, err := c.Prompt(ctx, sid, bench.TextHello); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	run.par = float64(calls) / time.Since(t).Seconds()
	run.parClientCPU, run.parServerCPU = cpu.perCall(calls)
	if e, ok := firstErr.Load().(error); ok {
		return run, e
	}
	return run, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func stdioTable(results []stdioResult, runs, calls int) string {
	var ref *stdioResult
	for i := range results {
		if results[i].Row == "acprpc" {
			ref = &results[i]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Round trips over a spawned server's stdio: %d session/prompt calls per run, median of %d runs.\n", calls, runs)
	fmt.Fprintf(&b, "Rows are client→server; one name means both sides. \"vs acprpc\" is the row's calls/s divided by acprpc's.\n")
	fmt.Fprintf(&b, "\"cpu µs\" is each process's CPU time (user and system) per call, client / server, sequential and with 8 callers:\n")
	fmt.Fprintf(&b, "a side's own cost, which the load moves far less than the clock.\n\n")
	fmt.Fprintf(&b, "%-20s %12s %9s %12s %9s %12s %14s %14s\n", "row", "seq calls/s", "vs acprpc", "8× calls/s", "vs acprpc", "seq µs/call",
		"seq cpu µs", "8× cpu µs")
	for _, r := range results {
		if r.Skipped != "" {
			fmt.Fprintf(&b, "%-20s skipped: %s\n", r.Row, r.Skipped)
			continue
		}
		fmt.Fprintf(&b, "%-20s %12.0f %9s %12.0f %9s %12.1f %14s %14s\n", r.Row,
			r.SeqMed, ratio(r.SeqMed, ref, func(x *stdioResult) float64 { return x.SeqMed }),
			r.Par8Med, ratio(r.Par8Med, ref, func(x *stdioResult) float64 { return x.Par8Med }),
			1e6/r.SeqMed, cpuPair(r.SeqClientCPUMed, r.SeqServerCPUMed), cpuPair(r.Par8ClientCPUMed, r.Par8ServerCPUMed))
	}
	return b.String()
}

func cpuCell(us float64) string {
	if us < 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", us)
}

func cpuPair(client, server float64) string { return cpuCell(client) + " / " + cpuCell(server) }

func ratio[T any](v float64, ref *T, get func(*T) float64) string {
	if ref == nil || get(ref) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", v/get(ref))
}
