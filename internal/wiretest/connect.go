package wiretest

import (
	"context"
	"testing"

	"github.com/acpkit/acprpc"
)

// Connect starts a Conn serving h over tr, with a scripted Peer at the other
// end. The test's cleanup closes the Conn, then the Peer. Options: Parent
// gives NewConn its context, Tapped records what the Conn sends (Peer.Tap).
func Connect(t testing.TB, tr Transport, h acprpc.Handler, opts *acprpc.Options, with ...Option) (*acprpc.Conn, *Peer) {
	t.Helper()
	s := setupOf(with)
	conn, end, err := tr.Open()
	if err != nil {
		t.Fatalf("wiretest: open %s: %v", tr.Name, err)
	}
	p := NewPeer(t, end) // its cleanup runs after the Conn's
	if s.tapped {
		p.tap = newTap(conn, &Ledger{}, AtoB)
		conn = p.tap
	}
	c := acprpc.NewConn(s.parent, conn, h, opts)
	p.conn = c
	t.Cleanup(func() { _ = c.Close() })
	return c, p
}

// Option adjusts what Connect and NewWire make.
type Option func(*setup)

type setup struct {
	parent context.Context
	tapped bool
	relay  *Transport
}

func setupOf(with []Option) setup {
	s := setup{parent: context.Background()}
	for _, o := range with {
		o(&s)
	}
	return s
}

// Parent gives NewConn ctx, so that the Conn closes when ctx ends.
func Parent(ctx context.Context) Option { return func(s *setup) { s.parent = ctx } }

// Tapped stands a Tap between each Conn and its transport, recording what
// the Conn sends in a Ledger (as going AtoB for Connect's Conn and a Wire's
// A, BtoA for a Wire's B) and counting its bytes: Peer.Tap, Wire.Ledger. A
// Tap hides the transport's optional interfaces from the Conn (a Stream's
// try-send and whether its Close interrupts), so a test of those connects
// untapped.
func Tapped() Option { return func(s *setup) { s.tapped = true } }

// Relay joins a Wire's two Conns over tr, each through its own transport,
// the two copied both ways by a relay that, as a dying proxy would, closes
// both when either ends. It implies Tapped, and the Ledger keeps every line
// (Ledger.Keep). Without Relay a Wire's Conns share two os.Pipes with
// nothing between, so the timing is the pipes' own.
func Relay(tr Transport) Option {
	return func(s *setup) { s.relay, s.tapped = &tr, true }
}
