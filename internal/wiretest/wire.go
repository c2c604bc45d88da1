package wiretest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/acpkit/acprpc"
)

// Wire is two Conns, A and B, each one's transport tapped into one Ledger:
// A's messages go AtoB, B's go BtoA. NewWire joins them by os.Pipes, Pair
// over any Transport through a relay.
type Wire struct {
	A, B       *acprpc.Conn
	Ledger     *Ledger
	TapA, TapB *Tap

	t     testing.TB
	ends  [2]*End        // Pair's: the relay's ends of the two transports
	relay sync.WaitGroup // Pair's: the two pumps
	marks int            // Settle's marks sent by each side so far
}

// NewWire starts two Conns joined by a pair of os.Pipes. No relay stands
// between them, so the timing is the pipes' own. The test's cleanup closes
// both.
func NewWire(t testing.TB, a, b Side) *Wire {
	t.Helper()
	pipe := func() (*os.File, *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatalf("wiretest: os.Pipe: %v", err)
		}
		return r, w
	}
	aIn, bOut := pipe()
	bIn, aOut := pipe()
	w := &Wire{t: t, Ledger: &Ledger{}}
	w.TapA = newTap(acprpc.NewStreamPipes(aIn, aOut), w.Ledger, AtoB)
	w.TapB = newTap(acprpc.NewStreamPipes(bIn, bOut), w.Ledger, BtoA)
	w.TapA.Inject, w.TapB.Inject = a.Inject, b.Inject
	w.A = acprpc.NewConn(context.Background(), w.TapA, a.Handler, a.Options)
	w.B = acprpc.NewConn(context.Background(), w.TapB, b.Handler, b.Options)
	t.Cleanup(func() {
		_ = w.A.Close()
		_ = w.B.Close()
	})
	return w
}

// MarkMethod is the notification Settle sends each side's peer; handlers
// may ignore it.
const MarkMethod = "wiretest/mark"

// Settle waits until each side has written everything it had queued (a
// mark notification from each, written after the rest, is in the ledger)
// and every request either way has an answer in the ledger. Calls that
// returned on a cancel may have left their requests queued, and their
// answers on the way; after Settle both are in. Settle is not safe to call
// from two goroutines at once.
func (w *Wire) Settle(ctx context.Context) error {
	w.marks++
	for d, c := range []*acprpc.Conn{w.A, w.B} {
		if err := c.Notify(ctx, MarkMethod, nil); err != nil {
			return fmt.Errorf("mark: %w", err)
		}
		dir := Direction(d)
		if err := w.Ledger.Await(ctx, func() bool {
			return w.Ledger.Notifications(dir, MarkMethod) >= w.marks
		}); err != nil {
			return fmt.Errorf("waiting for %s's mark: %w", dir, err)
		}
	}
	if err := w.Ledger.AwaitAnswered(ctx); err != nil {
		return fmt.Errorf("waiting for answers: %d requests %s and %d %s open: %w",
			w.Ledger.Open(AtoB), AtoB, w.Ledger.Open(BtoA), BtoA, err)
	}
	return nil
}
