package wiretest

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/acpkit/acprpc"
)

// Wire is two Conns, A and B. Made Tapped, each one's transport is tapped
// into one Ledger: A's messages go AtoB, B's go BtoA.
type Wire struct {
	A, B       *acprpc.Conn
	Ledger     *Ledger // nil unless Tapped
	TapA, TapB *Tap    // nil unless Tapped

	t     testing.TB
	ends  [2]io.ReadWriteCloser // Relay's: the relay's ends of the two transports
	relay sync.WaitGroup        // Relay's: the two pumps
	marks int                   // Settle's marks sent by each side so far
}

// Side configures one Conn of a Wire.
type Side struct {
	Handler acprpc.Handler
	Options *acprpc.Options
	// Inject, on a Tapped Wire without a Relay, slips lines into this
	// side's output (see Tap.Inject).
	Inject func(l *Ledger, d Direction) []byte
}

// Direction names one way through a Wire.
type Direction int

// The two ways through a Wire.
const (
	AtoB Direction = iota
	BtoA
)

// String names the direction as an arrow.
func (d Direction) String() string {
	if d == AtoB {
		return "A→B"
	}
	return "B→A"
}

// NewWire starts two Conns joined by a pair of os.Pipes, or over a Relay.
// The test's cleanup closes both (and the relay, failing the test if a line
// on it was not a valid message).
func NewWire(t testing.TB, a, b Side, with ...With) *Wire {
	t.Helper()
	s := setupOf(t, with)
	w := &Wire{t: t}
	var ta, tb acprpc.Transport
	if s.relayed() {
		ta, tb = w.openRelay(s.Relay)
	} else {
		ta, tb = w.openPipes()
	}
	if s.Tapped {
		w.Ledger = &Ledger{Keep: s.relayed()}
		w.TapA, w.TapB = newTap(ta, w.Ledger, AtoB), newTap(tb, w.Ledger, BtoA)
		if !s.relayed() {
			w.TapA.Inject, w.TapB.Inject = a.Inject, b.Inject
		}
		ta, tb = w.TapA, w.TapB
	}
	w.A = acprpc.NewConn(s.Parent, ta, a.Handler, a.Options)
	w.B = acprpc.NewConn(s.Parent, tb, b.Handler, b.Options)
	t.Cleanup(func() {
		_ = w.A.Close()
		_ = w.B.Close()
	})
	return w
}

func (w *Wire) openPipes() (a, b acprpc.Transport) {
	pipe := func() (*os.File, *os.File) {
		r, wr, err := os.Pipe()
		if err != nil {
			w.t.Fatalf("wiretest: os.Pipe: %v", err)
		}
		return r, wr
	}
	aIn, bOut := pipe()
	bIn, aOut := pipe()
	return acprpc.NewStreamPipes(aIn, aOut), acprpc.NewStreamPipes(bIn, bOut)
}

func (w *Wire) openRelay(tr Transport) (a, b acprpc.Transport) {
	sa, ea, err := tr.open()
	if err != nil {
		w.t.Fatalf("wiretest: open %s: %v", tr.Name, err)
	}
	sb, eb, err := tr.open()
	if err != nil {
		ea.Close()
		w.t.Fatalf("wiretest: open %s: %v", tr.Name, err)
	}
	w.ends = [2]io.ReadWriteCloser{ea, eb}
	w.t.Cleanup(w.closeRelay)
	w.relay.Add(2)
	go w.pump(ea, eb)
	go w.pump(eb, ea)
	return sa, sb
}

// pump copies one way; when either side ends it closes both, as a dying
// proxy would.
func (w *Wire) pump(r io.Reader, wr io.Writer) {
	defer w.relay.Done()
	defer w.closeEnds()
	_, _ = io.Copy(wr, r)
}

func (w *Wire) closeEnds() {
	for _, e := range w.ends {
		_ = e.Close()
	}
}

func (w *Wire) closeRelay() {
	w.closeEnds()
	w.relay.Wait()
	for _, d := range []Direction{AtoB, BtoA} {
		for _, p := range w.Ledger.Tally(d).Problems {
			w.t.Errorf("wiretest: %s: %s", d, p)
		}
	}
}

// Lines returns what has gone one way so far (a Relay's Wire keeps lines).
func (w *Wire) Lines(d Direction) []Msg { return w.Ledger.Lines(d) }

// Await waits until a line matching match has gone the way d, and returns
// it; it fails the test if ctx ends first.
func (w *Wire) Await(ctx context.Context, d Direction, match func(Msg) bool) Msg {
	w.t.Helper()
	return w.Ledger.AwaitLine(ctx, w.t, d, match)
}

// Count returns how many lines that went the way d match.
func (w *Wire) Count(d Direction, match func(Msg) bool) int {
	n := 0
	for _, m := range w.Lines(d) {
		if match(m) {
			n++
		}
	}
	return n
}

// markMethod is the notification Settle sends each side's peer; handlers
// may ignore it, and a Ledger counts it apart from the test's lines.
const markMethod = "wiretest/mark"

// Settle waits until each side of a Tapped Wire has written everything it
// had queued (a mark notification from each, written after the rest, is in
// the ledger) and every request either way has an answer in the ledger.
// Calls that returned on a cancel may have left their requests queued, and
// their answers on the way; after Settle both are in. Settle is not safe to
// call from two goroutines at once.
func (w *Wire) Settle(ctx context.Context) error {
	w.marks++
	for d, c := range []*acprpc.Conn{w.A, w.B} {
		if err := c.Notify(ctx, markMethod, nil); err != nil {
			return fmt.Errorf("mark: %w", err)
		}
		dir := Direction(d)
		if err := w.Ledger.Await(ctx, func() bool {
			return w.Ledger.marked(dir) >= w.marks
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
