package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Benchmarks are named Benchmark<Case>/peer=<name> so benchstat can put the
// peers side by side (benchstat -col /peer).

// floodTurn is the number of session/update notifications the agent sends
// per prompt turn in BenchmarkNotifyFlood. coder's SDK closes the connection
// when more than 1024 notifications wait in its client's queue, so a turn is
// kept below that for every peer.
const floodTurn = 1000

const warmup = 200

func forEachPeer(b *testing.B, fn func(b *testing.B, p Peer)) {
	for _, p := range Peers() {
		b.Run("peer="+p.Name(), func(b *testing.B) { fn(b, p) })
	}
}

func newBenchLink(b *testing.B, p Peer, wl *Workload, opt LinkOptions) *Link {
	b.Helper()
	l, err := NewLink(p, wl, opt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := l.Close(); err != nil {
			b.Errorf("close: %v", err)
		}
	})
	for i := 0; i < warmup; i++ {
		if _, err := l.Client.Prompt(context.Background(), "s1", TextHello); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
	}
	return l
}

// cpuLoop resets the timer, runs body and reports, next to the clock's time
// per op, the CPU time per op of the whole process: both ends of the link.
func cpuLoop(b *testing.B, body func()) {
	b.ReportAllocs()
	b.ResetTimer()
	start := ProcessCPU()
	body()
	b.StopTimer()
	if end := ProcessCPU(); start >= 0 && end >= 0 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	forEachPeer(b, func(b *testing.B, p Peer) {
		l := newBenchLink(b, p, &Workload{}, LinkOptions{})
		ctx := context.Background()
		cpuLoop(b, func() {
			for i := 0; i < b.N; i++ {
				stop, err := l.Client.Prompt(ctx, "s1", TextHello)
				if err != nil || stop != StopEndTurn {
					b.Fatalf("prompt: %q, %v", stop, err)
				}
			}
		})
	})
}

// BenchmarkRoundTripStdio is BenchmarkRoundTrip with the agent on blocking
// descriptors, as a spawned agent's stdin and stdout are: the case of an
// editor and its agent, in one process.
func BenchmarkRoundTripStdio(b *testing.B) {
	forEachPeer(b, func(b *testing.B, p Peer) {
		l := newBenchLink(b, p, &Workload{}, LinkOptions{AgentStdio: true})
		ctx := context.Background()
		cpuLoop(b, func() {
			for i := 0; i < b.N; i++ {
				stop, err := l.Client.Prompt(ctx, "s1", TextHello)
				if err != nil || stop != StopEndTurn {
					b.Fatalf("prompt: %q, %v", stop, err)
				}
			}
		})
	})
}

func BenchmarkRoundTripParallel8(b *testing.B) {
	forEachPeer(b, func(b *testing.B, p Peer) {
		l := newBenchLink(b, p, &Workload{}, LinkOptions{})
		ctx := context.Background()
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		cpuLoop(b, func() {
			for w := 0; w < 8; w++ {
				sid := fmt.Sprintf("s%d", w+1) // one session per caller, same length
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if _, err := l.Client.Prompt(ctx, sid, TextHello); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
		})
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	})
}

// BenchmarkNotifyFlood times one session/update from agent to client: the
// agent sends b.N of them in turns of floodTurn, and the clock stops when the
// client's handler has seen the last one.
func BenchmarkNotifyFlood(b *testing.B) {
	forEachPeer(b, func(b *testing.B, p Peer) {
		l := newBenchLink(b, p, &Workload{}, LinkOptions{})
		ctx := context.Background()
		base := l.Updates.Load()
		b.ReportAllocs()
		b.ResetTimer()
		done := l.Updates.Await(base + int64(b.N))
		for left := b.N; left > 0; left -= floodTurn {
			if _, err := l.Client.Prompt(ctx, "s1", FloodText(min(left, floodTurn))); err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-done:
		case <-time.After(time.Minute):
			b.Fatalf("saw %d of %d updates", l.Updates.Load()-base, b.N)
		}
	})
}

func BenchmarkParams1MiB(b *testing.B) {
	text := params1MiBText()
	forEachPeer(b, func(b *testing.B, p Peer) {
		l := newBenchLink(b, p, &Workload{}, LinkOptions{})
		ctx := context.Background()
		b.SetBytes(1 << 20)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := l.Client.Prompt(ctx, "s1", text); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCancel times one cancellation: with a prompt blocked in the
// agent's handler, the caller cancels its context; the operation ends when
// the caller's Prompt has returned, the handler's context has fired and the
// cancellation answer has reached the client's input. The three times are
// also reported on their own (return-ns, handler-ns, answer-ns).
func BenchmarkCancel(b *testing.B) {
	forEachPeer(b, func(b *testing.B, p Peer) {
		if p.Cancel() == CancelNone {
			b.Skip("peer has no cancellation")
		}
		started := make(chan struct{}, 1)
		seen := make(chan int64, 1)
		answered := make(chan int64, 1)
		wl := &Workload{
			OnBlock:  func() { started <- struct{}{} },
			OnCancel: func() { seen <- Mono() },
		}
		mw := NewMarkerWatch(func() { answered <- Mono() })
		l := newBenchLink(b, p, wl, LinkOptions{Tap: mw.Tap})
		ret := make(chan int64, 1)
		var sumRet, sumSeen, sumAns int64
		one := func() {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				_, _ = l.Client.Prompt(ctx, "s1", TextBlock)
				ret <- Mono()
			}()
			<-started
			t0 := Mono()
			cancel()
			tRet, tSeen, tAns := recv(b, ret), recv(b, seen), recv(b, answered)
			sumRet += tRet - t0
			sumSeen += tSeen - t0
			sumAns += tAns - t0
		}
		for i := 0; i < warmup/10; i++ {
			one()
		}
		sumRet, sumSeen, sumAns = 0, 0, 0
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			one()
		}
		b.StopTimer()
		n := float64(b.N)
		b.ReportMetric(float64(sumRet)/n, "return-ns/op")
		b.ReportMetric(float64(sumSeen)/n, "handler-ns/op")
		b.ReportMetric(float64(sumAns)/n, "answer-ns/op")
	})
}

func recv(b *testing.B, ch <-chan int64) int64 {
	select {
	case t := <-ch:
		return t
	case <-time.After(liveness):
		b.Fatal("cancellation did not complete")
		return 0
	}
}
