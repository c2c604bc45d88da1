package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

const liveness = 10 * time.Second

// Params1MiBText returns a prompt text that makes session/prompt params
// exactly 1 MiB of JSON.
func params1MiBText() string {
	overhead := len(`{"sessionId":"s1","prompt":[{"type":"text","text":""}]}`)
	return strings.Repeat("x", 1<<20-overhead)
}

func TestPeers(t *testing.T) {
	for _, stdio := range []bool{false, true} {
		for _, p := range Peers() {
			t.Run(fmt.Sprintf("%s/agentStdio=%v", p.Name(), stdio), func(t *testing.T) {
				// Every goroutine the peer started must be gone after close.
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				testPeer(t, p, stdio)
			})
		}
	}
}

func testPeer(t *testing.T, p Peer, agentStdio bool) {
	started := make(chan struct{}, 1)
	seen := make(chan struct{}, 1)
	answered := make(chan struct{}, 1)
	wl := &Workload{
		OnBlock:  func() { started <- struct{}{} },
		OnCancel: func() { seen <- struct{}{} },
	}
	mw := NewMarkerWatch(func() { answered <- struct{}{} })
	l, err := NewLink(p, wl, LinkOptions{Tap: mw.Tap, AgentStdio: agentStdio})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	ctx := context.Background()

	stop, err := l.Client.Prompt(ctx, "s1", TextHello)
	if err != nil || stop != StopEndTurn {
		t.Fatalf("hello: %q, %v", stop, err)
	}
	stop, err = l.Client.Prompt(ctx, "s1", params1MiBText())
	if err != nil || stop != StopEndTurn {
		t.Fatalf("1 MiB: %q, %v", stop, err)
	}
	for i := 0; i < 3; i++ {
		want := l.Updates.Load() + 500
		done := l.Updates.Await(want)
		stop, err = l.Client.Prompt(ctx, "s1", FloodText(500))
		if err != nil || stop != StopEndTurn {
			t.Fatalf("flood: %q, %v", stop, err)
		}
		select {
		case <-done:
		case <-time.After(liveness):
			t.Fatalf("flood: %d updates of %d", l.Updates.Load(), want)
		}
	}
	if p.Cancel() == CancelNone {
		return
	}
	for i := 0; i < 3; i++ {
		cctx, cancel := context.WithCancel(ctx)
		ret := make(chan error, 1)
		go func() {
			_, err := l.Client.Prompt(cctx, "s1", TextBlock)
			ret <- err
		}()
		wait(t, started, "handler start")
		cancel()
		wait(t, seen, "handler cancel")
		select {
		case <-ret:
		case <-time.After(liveness):
			t.Fatal("Prompt did not return after cancel")
		}
		wait(t, answered, "cancellation answer")
	}
	// The connection still works after cancels.
	if stop, err := l.Client.Prompt(ctx, "s1", TextHello); err != nil || stop != StopEndTurn {
		t.Fatalf("hello after cancel: %q, %v", stop, err)
	}
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(liveness):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// A PatternWatch counts every pattern once, however the stream is split:
// across two reads, byte by byte, or many in one read.
func TestPatternWatch(t *testing.T) {
	stream := []byte(`{"stopReason":"cancelled"}` + "\n" + `{"error":{"code":-32800}}` + "\n" + `{"stopReason":"cancelled"}{"x":"cancelled"}`)
	for _, size := range []int{1, 2, 7, 13, len(stream)} {
		hits := 0
		w := NewMarkerWatch(func() { hits++ })
		for i := 0; i < len(stream); i += size {
			w.Tap(stream[i:min(i+size, len(stream))])
		}
		if hits != 4 {
			t.Errorf("chunks of %d: %d hits, want 4", size, hits)
		}
	}
}
