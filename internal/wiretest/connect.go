package wiretest

import (
	"context"
	"testing"

	"github.com/acpkit/acprpc"
)

// Connect starts a Conn serving h over tr, with a scripted Peer at the other
// end. The test's cleanup closes the Conn, then the Peer. With, if given,
// gives NewConn its context or taps the Conn (Peer.Tap).
func Connect(t testing.TB, tr Transport, h acprpc.Handler, opts *acprpc.Options, with ...With) (*acprpc.Conn, *Peer) {
	t.Helper()
	s := setupOf(t, with)
	conn, end, err := tr.open()
	if err != nil {
		t.Fatalf("wiretest: open %s: %v", tr.Name, err)
	}
	p := newPeer(t, end) // its cleanup runs after the Conn's
	if s.Tapped {
		p.tap = newTap(conn, &Ledger{}, AtoB)
		conn = p.tap
	}
	c := acprpc.NewConn(s.Parent, conn, h, opts)
	p.conn = c
	t.Cleanup(func() { _ = c.Close() })
	return c, p
}

// With says how Connect and NewWire make their Conns; the zero With, as
// passing none, makes them untapped, with no parent context, a Wire over
// two os.Pipes. Give at most one.
type With struct {
	// Parent, if set, is NewConn's context: the Conn closes when it ends.
	Parent context.Context

	// Tapped stands a Tap between each Conn and its transport, recording
	// what the Conn sends in a Ledger (as going AtoB for Connect's Conn
	// and a Wire's A, BtoA for a Wire's B) and counting its bytes:
	// Peer.Tap, Wire.Ledger. A Tap hides the transport's optional
	// interfaces from the Conn (a Stream's try-send, whether its Close
	// interrupts a read, whether a read holds its thread), so a test of
	// those connects untapped.
	Tapped bool

	// Relay, if set, joins a Wire's two Conns over it, each through its
	// own transport, the two copied both ways by a relay that, as a dying
	// proxy would, closes both when either ends. It implies Tapped, and
	// the Ledger keeps every line (Ledger.Keep). Without it a Wire's Conns
	// share two os.Pipes with nothing between, so the timing is the
	// pipes' own.
	Relay Transport
}

// setupOf is the one With given, its defaults filled in; more than one
// fails the test.
func setupOf(t testing.TB, with []With) With {
	t.Helper()
	var s With
	switch len(with) {
	case 0:
	case 1:
		s = with[0]
	default:
		t.Fatalf("wiretest: %d Withs given, at most one is", len(with))
	}
	if s.Parent == nil {
		s.Parent = context.Background()
	}
	if s.relayed() {
		s.Tapped = true
	}
	return s
}

// relayed reports whether a Relay was given.
func (s With) relayed() bool { return s.Relay.Open != nil || s.Relay.OpenMessages != nil }
