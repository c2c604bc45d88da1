package wiretest

import (
	"context"
	"io"
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

// ConnectTapped starts a Conn serving h over os.Pipes with a Peer at the
// far end, as ConnectContext does, and records every line the Conn writes
// in the Tap's Ledger as lines going AtoB: A is the Conn, B the Peer. wrap,
// if not nil, goes between the Conn and the Tap (FailAfter, say), so the Tap
// records only what got through.
func ConnectTapped(ctx context.Context, t testing.TB, h acprpc.Handler, opts *acprpc.Options,
	wrap func(io.WriteCloser) io.WriteCloser) (*acprpc.Conn, *Peer, *Tap) {
	t.Helper()
	in, out, end, err := osPipes()
	if err != nil {
		t.Fatalf("wiretest: os.Pipe: %v", err)
	}
	tap := NewTap(out, &Ledger{}, AtoB)
	var w io.WriteCloser = tap
	if wrap != nil {
		w = wrap(tap)
	}
	p := NewPeer(t, end) // its cleanup runs after the Conn's
	c := acprpc.NewConn(ctx, acprpc.NewStreamPipes(in, w), h, opts)
	t.Cleanup(func() { _ = c.Close() })
	return c, p, tap
}
