package acprpc_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// An idle connection holds its read goroutine alone: the writer and
// notification goroutines run only while there is something to write or
// handle, and handler goroutines leave once they have waited a while for
// another request.

// awaitGoroutines waits until at most n goroutines run. The runtime offers
// nothing to wake on here, so the count is polled.
func awaitGoroutines(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, wiretest.Goroutines())
		}
	}
}

func TestIdleConnGoroutines(t *testing.T) {
	ctx := wiretest.Context(t)
	const burst = 8
	running := make(chan struct{}, burst)
	release := make(chan struct{})
	noted := make(chan struct{}, 2)
	h := acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
		switch req.Method {
		case "x/note":
			noted <- struct{}{}
		case "x/hold":
			running <- struct{}{}
			<-release
		}
		return struct{}{}, nil
	})
	base := runtime.NumGoroutine()
	a, b := acprpc.Pipe()
	server := acprpc.NewConn(ctx, b, h, nil)
	defer server.Close()
	client := acprpc.NewConn(ctx, a, h, nil)
	defer client.Close()
	awaitGoroutines(t, ctx, base+2) // a read goroutine each

	// A call and a notification each way, then quiet.
	require.NoError(t, client.Call(ctx, "x/ping", nil, nil))
	require.NoError(t, server.Call(ctx, "x/ping", nil, nil))
	require.NoError(t, client.Notify(ctx, "x/note", nil))
	require.NoError(t, server.Notify(ctx, "x/note", nil))
	wiretest.Recv(t, ctx, noted)
	wiretest.Recv(t, ctx, noted)
	awaitGoroutines(t, ctx, base+2)

	// A burst of calls at once, then quiet.
	var wg sync.WaitGroup
	for range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, client.Call(ctx, "x/hold", nil, nil))
		}()
	}
	for range burst {
		wiretest.Recv(t, ctx, running)
	}
	close(release)
	wg.Wait()
	awaitGoroutines(t, ctx, base+2)
}
