package wiretest

import (
	"context"
	"os"
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

// ConnectTapped is ConnectContext with every message the Conn sends
// recorded in the Tap's Ledger, as going AtoB: A is the Conn, B the Peer.
func ConnectTapped(ctx context.Context, t testing.TB, tr Transport, h acprpc.Handler,
	opts *acprpc.Options) (*acprpc.Conn, *Peer, *Tap) {
	t.Helper()
	conn, end, err := tr.Open()
	if err != nil {
		t.Fatalf("wiretest: open %s: %v", tr.Name, err)
	}
	tap := newTap(conn, &Ledger{}, AtoB)
	p := NewPeer(t, end) // its cleanup runs after the Conn's
	c := acprpc.NewConn(ctx, tap, h, opts)
	t.Cleanup(func() { _ = c.Close() })
	return c, p, tap
}

// PipeConns connects a client Conn serving client to an agent Conn serving
// agent over two os.Pipes, as between a client and its agent subprocess,
// and closes both when the test ends. It returns the client.
func PipeConns(t testing.TB, agent, client acprpc.Handler) *acprpc.Conn {
	t.Helper()
	in, out, end, err := osPipes()
	if err != nil {
		t.Fatal(err)
	}
	a := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(end.R.(*os.File), end.W.(*os.File)), agent, nil)
	c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(in, out), client, nil)
	t.Cleanup(func() {
		c.Close()
		a.Close()
	})
	return c
}
