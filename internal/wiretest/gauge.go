package wiretest

import (
	"context"
	"sync"

	"github.com/acpkit/acprpc"
)

// gauge counts the handlers running, so a test can wait until none is. The
// zero gauge is ready to use.
type gauge struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n next comes to zero
}

// track returns h counted by the gauge while it runs.
func (g *gauge) track(h acprpc.HandlerFunc) acprpc.HandlerFunc {
	return func(ctx context.Context, req *acprpc.Request) (any, error) {
		g.add(1)
		defer g.add(-1)
		return h(ctx, req)
	}
}

func (g *gauge) add(d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n += d
	if g.n == 0 && g.zero != nil {
		close(g.zero)
		g.zero = nil
	}
}

func (g *gauge) value() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

func (g *gauge) awaitZero(ctx context.Context) error {
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
