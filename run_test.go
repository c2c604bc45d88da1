package acprpc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// serveInBackground runs Serve over one end of a Pipe with an echo handler
// and returns the other end's Conn and Serve's outcome.
func serveInBackground(t *testing.T, ctx context.Context) (*acprpc.Conn, <-chan error) {
	t.Helper()
	agentEnd, clientEnd := acprpc.Pipe()
	served := make(chan error, 1)
	go func() { served <- acprpc.Serve(ctx, agentEnd, wiretest.Mux{"echo": wiretest.Echo}, nil) }()
	client := acprpc.NewConn(context.Background(), clientEnd, nil, nil)
	t.Cleanup(func() { client.Close() })
	return client, served
}

// Serve serves until the peer leaves, and a peer leaving is no error.
func TestServeEndsNilWhenThePeerLeaves(t *testing.T) {
	ctx := wiretest.Context(t)
	client, served := serveInBackground(t, context.Background())
	got, err := acprpc.CallFor[sessionRef](ctx, client, "echo", sessionRef{SessionID: "hi"})
	require.NoError(t, err)
	assert.Equal(t, "hi", got.SessionID)
	require.NoError(t, client.Close())
	assert.NoError(t, wiretest.Recv(t, ctx, served))
}

// Serve ends when its context does, and says so.
func TestServeEndsWithItsContext(t *testing.T) {
	ctx := wiretest.Context(t)
	serveCtx, cancel := context.WithCancel(context.Background())
	client, served := serveInBackground(t, serveCtx)
	_, err := acprpc.CallFor[sessionRef](ctx, client, "echo", sessionRef{SessionID: "hi"})
	require.NoError(t, err)
	cancel()
	err = wiretest.Recv(t, ctx, served)
	require.ErrorIs(t, err, acprpc.ErrConnClosed)
	assert.ErrorIs(t, err, context.Canceled)
}
