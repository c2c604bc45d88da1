package wiretest

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// A wait that times out says what every goroutine was doing, the waiting
// test's own among them.
func TestTimedOutWaitShowsGoroutines(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var l Ledger
	err := l.Await(ctx, func() bool { return false })
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "wiretest.TestTimedOutWaitShowsGoroutines")
	var r Recorder
	release := make(chan struct{})
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _ = r.Track(Hold(release))(context.Background(), &acprpc.Request{})
	}()
	require.NoError(t, r.await(Context(t), func() bool { return r.running == 1 }))
	// The count goes up just before the handler is entered, and a goroutine
	// profile is one moment: take it again until the handler is in it, held.
	bound := Context(t)
	for {
		err = r.AwaitIdle(ctx)
		require.ErrorIs(t, err, context.Canceled)
		if strings.Contains(err.Error(), ".Hold.") || bound.Err() != nil {
			break
		}
		runtime.Gosched()
	}
	assert.Contains(t, err.Error(), ".Hold.", "the stack of the handler still held")
	close(release)
	Recv(t, Context(t), held)
}
