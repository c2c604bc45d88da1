package wiretest

import (
	"context"
	"io"
	"testing"

	"github.com/acpkit/acprpc"
)

// Side configures one Conn of a Wire.
type Side struct {
	Handler acprpc.Handler
	Options *acprpc.Options
	// Inject slips lines into this side's output (see Tap.Inject); a
	// Wire made by Pair ignores it.
	Inject Injector
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

// Pair connects two Conns over tr, each through its own transport, the
// two joined by a relay that copies bytes both ways and, as a dying proxy
// would, closes both when either ends. The Wire's Ledger keeps every line.
// The test's cleanup closes both Conns and the relay, and fails the test if
// a line on the wire was not a valid message.
func Pair(t testing.TB, tr Transport, a, b Side) *Wire {
	t.Helper()
	sa, ea, err := tr.Open()
	if err != nil {
		t.Fatalf("wiretest: open %s: %v", tr.Name, err)
	}
	sb, eb, err := tr.Open()
	if err != nil {
		ea.Close()
		t.Fatalf("wiretest: open %s: %v", tr.Name, err)
	}
	l := &Wire{t: t, ends: [2]*End{ea, eb}, Ledger: &Ledger{Keep: true}}
	t.Cleanup(l.close)
	l.relay.Add(2)
	go l.pump(ea.R, eb.W)
	go l.pump(eb.R, ea.W)
	l.TapA, l.TapB = newTap(sa, l.Ledger, AtoB), newTap(sb, l.Ledger, BtoA)
	l.A = acprpc.NewConn(context.Background(), l.TapA, a.Handler, a.Options)
	l.B = acprpc.NewConn(context.Background(), l.TapB, b.Handler, b.Options)
	t.Cleanup(func() {
		_ = l.A.Close()
		_ = l.B.Close()
	})
	return l
}

// pump copies one way; when either side ends it closes both, as a dying
// proxy would.
func (l *Wire) pump(r io.Reader, w io.Writer) {
	defer l.relay.Done()
	defer l.closeEnds()
	_, _ = io.Copy(w, r)
}

func (l *Wire) closeEnds() {
	for _, e := range l.ends {
		_ = e.Close()
	}
}

func (l *Wire) close() {
	l.closeEnds()
	l.relay.Wait()
	for _, d := range []Direction{AtoB, BtoA} {
		for _, p := range l.Ledger.Tally(d).Problems {
			l.t.Errorf("wiretest: %s: %s", d, p)
		}
	}
}

// Lines returns what has gone one way so far.
func (l *Wire) Lines(d Direction) []Msg { return l.Ledger.Lines(d) }

// Await waits until a line matching match has gone the way d, and returns
// it; it fails the test if ctx ends first.
func (l *Wire) Await(ctx context.Context, d Direction, match func(Msg) bool) Msg {
	l.t.Helper()
	return l.Ledger.AwaitLine(ctx, l.t, d, match)
}

// Count returns how many lines that went the way d match.
func (l *Wire) Count(d Direction, match func(Msg) bool) int {
	n := 0
	for _, m := range l.Lines(d) {
		if match(m) {
			n++
		}
	}
	return n
}

// IsCancelOf matches a $/cancel_request for id (JSON text).
func IsCancelOf(id string) func(Msg) bool {
	return func(m Msg) bool {
		return m.IsNotification() && m.Method == acprpc.MethodCancelRequest && string(m.ParamMember("requestId")) == id
	}
}

// IsAnswerTo matches the answer for id (JSON text).
func IsAnswerTo(id string) func(Msg) bool {
	return func(m Msg) bool { return m.IsResponse() && string(m.ID) == id }
}

// IsRequestOf matches a request of method.
func IsRequestOf(method string) func(Msg) bool {
	return func(m Msg) bool { return m.IsRequest() && m.Method == method }
}
