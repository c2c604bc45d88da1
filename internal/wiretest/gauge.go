package wiretest

import (
	"context"
	"sync"

	"github.com/acpkit/acprpc"
)

// Gauge counts the handlers running, so a test can wait until none is. The
// zero Gauge is ready to use.
type Gauge struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n next comes to zero
}

// Track returns h counted by the gauge while it runs.
func (g *Gauge) Track(h acprpc.HandlerFunc) acprpc.HandlerFunc {
	return func(ctx context.Context, req *acprpc.Request) (any, error) {
		g.add(1)
		defer g.add(-1)
		return h(ctx, req)
	}
}

func (g *Gauge) add(d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n += d
	if g.n == 0 && g.zero != nil {
		close(g.zero)
		g.zero = nil
	}
}

// Running returns how many tracked handlers are running.
func (g *Gauge) Running() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// AwaitIdle waits until no tracked handler is running, and returns ctx's
// error if ctx ends first.
func (g *Gauge) AwaitIdle(ctx context.Context) error {
	g.mu.Lock()
	if g.n == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.zero == nil {
		g.zero = make(chan struct{})
	}
	zero := g.zero
	g.mu.Unlock()
	select {
	case <-zero:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
