package wiretest

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/acpkit/acprpc"
)

// Connect starts a Conn serving h over tr, with a scripted Peer at the other
// end. The test's cleanup closes the Conn, then the Peer.
func Connect(t testing.TB, tr Transport, h acprpc.Handler, opts *acprpc.Options) (*acprpc.Conn, *Peer) {
	t.Helper()
	return ConnectContext(context.Background(), t, tr, h, opts)
}

// ConnectContext is Connect with the context given to NewConn.
func ConnectContext(ctx context.Context, t testing.TB, tr Transport, h acprpc.Handler, opts *acprpc.Options) (*acprpc.Conn, *Peer) {
	t.Helper()
	s, end, err := tr.Open()
	if err != nil {
		t.Fatalf("wiretest: open %s: %v", tr.Name, err)
	}
	p := NewPeer(t, end) // its cleanup runs after the Conn's
	c := acprpc.NewConn(ctx, s, h, opts)
	t.Cleanup(func() { _ = c.Close() })
	return c, p
}

// Side configures one Conn of a Link.
type Side struct {
	Handler acprpc.Handler
	Options *acprpc.Options
}

// Direction names one way through a Link.
type Direction int

// The two ways through a Link.
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

// Link is two Conns talking over a transport, through a relay that records
// every line in each direction, so a test can see what went on the wire.
type Link struct {
	A, B *acprpc.Conn

	t     testing.TB
	ends  [2]*End
	mu    sync.Mutex
	log   [2][]Msg
	grown chan struct{} // closed and replaced whenever a line is recorded
	relay sync.WaitGroup
}

// Pair connects two Conns over tr (each through its own pipes, joined by
// the relay). The test's cleanup closes both and the relay.
func Pair(t testing.TB, tr Transport, a, b Side) *Link {
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
	l := &Link{t: t, ends: [2]*End{ea, eb}, grown: make(chan struct{})}
	t.Cleanup(l.close)
	l.relay.Add(2)
	go l.pump(AtoB, ea.R, eb.W)
	go l.pump(BtoA, eb.R, ea.W)
	l.A = acprpc.NewConn(context.Background(), sa, a.Handler, a.Options)
	l.B = acprpc.NewConn(context.Background(), sb, b.Handler, b.Options)
	t.Cleanup(func() {
		_ = l.A.Close()
		_ = l.B.Close()
	})
	return l
}

// pump copies lines one way, recording each; when either side ends it
// closes both, as a dying proxy would.
func (l *Link) pump(d Direction, r io.Reader, w io.Writer) {
	defer l.relay.Done()
	defer l.closeEnds()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			m, perr := Parse(strings.TrimSuffix(line, "\n"))
			if perr != nil {
				l.t.Errorf("wiretest: %s: %v", d, perr)
			}
			l.record(d, m)
			if _, werr := io.WriteString(w, line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (l *Link) record(d Direction, m Msg) {
	l.mu.Lock()
	l.log[d] = append(l.log[d], m)
	close(l.grown)
	l.grown = make(chan struct{})
	l.mu.Unlock()
}

func (l *Link) closeEnds() {
	for _, e := range l.ends {
		_ = e.Close()
	}
}

func (l *Link) close() {
	l.closeEnds()
	l.relay.Wait()
}

// Lines returns what has gone one way so far.
func (l *Link) Lines(d Direction) []Msg {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Msg(nil), l.log[d]...)
}

// Await waits until a line matching match has gone the way d, and returns
// it; it fails the test if ctx ends first.
func (l *Link) Await(ctx context.Context, d Direction, match func(Msg) bool) Msg {
	l.t.Helper()
	for {
		l.mu.Lock()
		for _, m := range l.log[d] {
			if match(m) {
				l.mu.Unlock()
				return m
			}
		}
		grown := l.grown
		l.mu.Unlock()
		select {
		case <-grown:
		case <-ctx.Done():
			l.t.Fatalf("wiretest: no matching line %s: %v; lines: %v", d, ctx.Err(), l.Lines(d))
			return Msg{}
		}
	}
}

// Count returns how many lines that went the way d match.
func (l *Link) Count(d Direction, match func(Msg) bool) int {
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
