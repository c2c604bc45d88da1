package acprpc_test

import (
	"log/slog"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// SetLogger changes where the connection's diagnostics go while it runs,
// from any goroutine.
func TestSetLogger(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	badLine := func() {
		p.Send(`{"jsonrpc":"2.0","id":1,`) // answered -32700 with a warning
		p.ExpectError(ctx, "null", acprpc.CodeParseError)
	}
	badLine()
	log := &wiretest.Recorder{}
	logger := log.Logger()
	c.SetLogger(logger)
	badLine()
	_, found := log.FindLogged(slog.LevelWarn, "not JSON")
	assert.True(t, found, "the logger set after construction receives the warning")
	c.SetLogger(nil)
	n := len(log.Logged())
	badLine()
	assert.Len(t, log.Logged(), n, "a nil logger is silent")

	// Loggers swapped while the connection logs: the race detector watches.
	// The swappers yield after each swap, so that on a busy machine they do
	// not starve the read loop, and stop however the test ends: a failed
	// wait must not leave them spinning through the tests after it.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for range 2 {
		wg.Go(func() {
			l := (&wiretest.Recorder{}).Logger()
			for {
				select {
				case <-stop:
					return
				default:
					c.SetLogger(l)
					runtime.Gosched()
				}
			}
		})
	}
	for range 50 {
		badLine()
	}
}
