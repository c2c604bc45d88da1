package acprpc

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitSpy is a context whose Done tells when it is first asked for: Notify
// asks only to wait.
type waitSpy struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (s *waitSpy) Done() <-chan struct{} {
	s.once.Do(func() { close(s.waiting) })
	return s.Context.Done()
}

// connWithUnreadInput returns a Conn over a Stream on two os.Pipes whose
// peer has written two messages: the read goroutine is held in the
// Received hook on the first until release is closed, and the second waits
// unread in the pipe. What the Conn writes is read and dropped. Its
// notifications wait up to wait for that input; ctx bounds the test.
func connWithUnreadInput(t *testing.T, wait time.Duration, release chan struct{}) (ctx context.Context, c *Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	held := make(chan struct{})
	hold := Hooks{Received: func(_ context.Context, m *Message) {
		if m.Method == "x/hold" {
			close(held)
			<-release
		}
	}}
	c = NewConn(context.Background(), NewStreamPipes(inR, outW), nil, &Options{Hooks: hold, UnreadInputWait: wait})
	t.Cleanup(func() {
		_ = c.Close()
		_ = inW.Close()
		_ = outR.Close()
	})
	go discard(outR)
	_, err = inW.WriteString(`{"jsonrpc":"2.0","method":"x/hold"}` + "\n")
	require.NoError(t, err)
	recvWithin(t, ctx, held)
	_, err = inW.WriteString(`{"jsonrpc":"2.0","method":"x/unread"}` + "\n")
	require.NoError(t, err)
	return ctx, c
}

// discard reads r to its end.
func discard(r *os.File) {
	buf := make([]byte, 4096)
	for {
		if _, err := r.Read(buf); err != nil {
			return
		}
	}
}

// While the peer's input waits unread, this side's notifications wait for
// the reader to take it in: a cancel the peer wrote is read before the
// stream runs on. Once the reader has taken a message in, they go again.
func TestNotifyWaitsForUnreadInput(t *testing.T) {
	release := make(chan struct{})
	ctx, c := connWithUnreadInput(t, time.Hour, release)
	require.NoError(t, c.Notify(ctx, "x/update", nil), "written, and the writer finds the input waiting")
	for !c.writer.inputFirst.Load() { // the batch is written, and the input found waiting
		require.NoError(t, ctx.Err(), "the writer never found the input waiting")
		runtime.Gosched()
	}

	spy := &waitSpy{waiting: make(chan struct{})}
	spyCtx, stop := context.WithCancel(ctx)
	spy.Context = spyCtx
	notified := make(chan error, 1)
	go func() { notified <- c.Notify(spy, "x/update", nil) }()
	recvWithin(t, ctx, spy.waiting)
	stop()
	err := recvWithin(t, ctx, notified)
	assert.ErrorIs(t, err, ErrCancelled, "the notification waited for the input")

	close(release)
	require.NoError(t, c.Notify(ctx, "x/update", nil), "the reader took the input in: no wait")
}

// The wait for the input is bounded: a reader held elsewhere (here, in a
// hook) does not stop the stream.
func TestNotifyWaitForInputIsBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ctx, c := connWithUnreadInput(t, time.Millisecond, release)
	for range 100 {
		require.NoError(t, c.Notify(ctx, "x/update", nil))
	}
}
