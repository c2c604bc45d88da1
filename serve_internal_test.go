package acprpc

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An idle connection keeps no handler goroutine: a worker that waits longer
// than workerIdleTimeout for its next request ends, and a request after that
// starts a new one.
func TestIdleWorkerEnds(t *testing.T) {
	defer func(d time.Duration) { workerIdleTimeout = d }(workerIdleTimeout)
	workerIdleTimeout = time.Millisecond

	a, b := Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	echo := HandlerFunc(func(_ context.Context, req *Request) (any, error) { return req.Params, nil })
	agent := NewConn(ctx, a, echo, nil)
	defer agent.Close()
	client := NewConn(ctx, b, nil, nil)
	defer client.Close()

	for round := range 2 {
		require.NoError(t, client.Call(ctx, "echo", map[string]int{"round": round}, nil))
		for agent.pool.waiting.Load() != 0 { // the worker is waiting, then gives up
			require.NoError(t, ctx.Err(), "round %d: the idle worker never ended", round)
			runtime.Gosched()
		}
	}
	assert.Equal(t, int32(0), agent.pool.waiting.Load())
}
