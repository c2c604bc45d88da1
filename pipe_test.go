package acprpc_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// TestPipeJoinsTwoConns: a call, its cancel cascading over the pair, and the
// close reaching the other side.
func TestPipeJoinsTwoConns(t *testing.T) {
	ctx := wiretest.Context(t)
	a, b := acprpc.Pipe()
	started := make(chan struct{})
	agent := acprpc.NewConn(ctx, a, wiretest.Mux{
		"echo": wiretest.Echo,
		"block": func(ctx context.Context, req *acprpc.Request) (any, error) {
			close(started)
			return wiretest.Hold(nil)(ctx, req)
		},
	}, nil)
	client := acprpc.NewConn(ctx, b, nil, nil)

	var got map[string]int
	require.NoError(t, client.Call(ctx, "echo", map[string]int{"n": 1}, &got))
	assert.Equal(t, map[string]int{"n": 1}, got)

	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- client.Call(callCtx, "block", nil, nil, acprpc.WaitAfterCancel(time.Minute)) }()
	<-started
	cancel()
	err := <-done
	var rpcErr *acprpc.Error
	require.ErrorAs(t, err, &rpcErr, "the agent's -32800 came back over the pipe")
	assert.Equal(t, int64(acprpc.CodeRequestCancelled), rpcErr.Code)
	assert.Equal(t, uint64(1), agent.Stats().CancelsReceived)

	require.NoError(t, client.Close())
	<-agent.Done()
	assert.ErrorIs(t, agent.Err(), io.EOF, "the agent's input ended")
	require.NoError(t, agent.Close())
}

// TestPipeSendCopies: the receiver's message does not change when the
// sender reuses its buffer.
func TestPipeSendCopies(t *testing.T) {
	a, b := acprpc.Pipe()
	defer a.Close()
	buf := []byte(`{"x":1}`)
	got := make(chan []byte)
	go func() { m, _ := b.Recv(); got <- m }()
	require.NoError(t, a.Send(buf))
	copy(buf, `{"y":2}`)
	assert.Equal(t, `{"x":1}`, string(<-got))
	require.NoError(t, a.Close())
	_, err := b.Recv()
	assert.ErrorIs(t, err, io.EOF)
	assert.True(t, errors.Is(b.Send([]byte(`{}`)), io.ErrClosedPipe))
}
