package acprpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// End-of-input tests: the peer closes the Conn's input right after its last
// requests, as a one-shot client (printf ... | agent) or an editor that
// half-closes as it quits does, and reads on. Every request read before the
// end is answered, once, before Serve returns and the output closes.

// serveWatched runs Serve over an os.Pipe pair, the end of its input watched,
// with the handler h makes of the watch, and returns the scripted peer and
// Serve's outcome.
func serveWatched(t *testing.T, h func(*wiretest.EOFWatch) acprpc.Handler, opts *acprpc.Options) (*wiretest.Peer, <-chan error) {
	t.Helper()
	conn, p := wiretest.RawPipe(t)
	w := wiretest.WatchEOF(conn)
	served := make(chan error, 1)
	go func() { served <- acprpc.Serve(context.Background(), acprpc.NewStream(w), h(w), opts) }()
	return p, served
}

// afterTheEnd is a handler that returns its result once the input's end
// has been read and then either the connection has closed or 50 ms have
// passed: a handler slower than the close.
func afterTheEnd(w *wiretest.EOFWatch) acprpc.Handler {
	return acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		select {
		case <-w.Seen():
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		work := time.NewTimer(50 * time.Millisecond) // the handler's work, not a wait of the test's
		defer work.Stop()
		select {
		case <-acprpc.ConnFromContext(ctx).Done():
		case <-work.C:
		}
		return map[string]string{"done": req.ID.String()}, nil
	})
}

// sendThenEnd sends n requests of method, IDs 1 to n, and ends the Conn's
// input right after them.
func sendThenEnd(p *wiretest.Peer, n int, method string) {
	for i := 1; i <= n; i++ {
		p.Request(fmt.Sprint(i), method, `{"sessionId":"s"}`)
	}
	p.CloseWrite()
}

// A request read just before the end of input, whose handler is slower than
// the close, gets its result before Serve returns and the output closes. It
// used to get nothing: the close cancelled the handler and dropped its
// answer, and Serve returned nil.
func TestInputEndRequestReadJustBeforeGetsItsResult(t *testing.T) {
	ctx := wiretest.Context(t)
	p, served := serveWatched(t, afterTheEnd, nil)
	sendThenEnd(p, 1, "x/slow")
	require.NoError(t, wiretest.Recv(t, ctx, served))
	got := p.RestAnswers(ctx) // all of it was written before Serve returned
	require.Len(t, got, 1)
	assert.JSONEq(t, `{"done":"1"}`, string(got["1"].Result))
}

// Many requests in flight at the end of input: each gets its result, once.
func TestInputEndManyRequestsInFlightAreEachAnsweredOnce(t *testing.T) {
	ctx := wiretest.Context(t)
	const n = 100
	p, served := serveWatched(t, afterTheEnd, nil)
	sendThenEnd(p, n, "x/slow")
	require.NoError(t, wiretest.Recv(t, ctx, served))
	got := p.RestAnswers(ctx)
	require.Len(t, got, n)
	for i := 1; i <= n; i++ {
		assert.JSONEq(t, fmt.Sprintf(`{"done":"%d"}`, i), string(got[fmt.Sprint(i)].Result))
	}
}

// Handlers that never return, and ignore their contexts, are answered as
// cancelled once InputEndGrace has passed: a prompt with its marker, any
// other method -32800. Serve returns then, not when they do. Each is named
// in a warning, and its late return said to be dropped.
func TestInputEndHandlerThatNeverReturnsIsAnsweredWithinTheBound(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	deaf := func(*wiretest.EOFWatch) acprpc.Handler {
		return acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) {
			<-release
			return nil, nil
		})
	}
	const bound = 100 * time.Millisecond
	p, served := serveWatched(t, deaf, &acprpc.Options{InputEndGrace: bound, Logger: log.Logger()})
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.Request("2", "x/other", "")
	ended := time.Now()
	p.CloseWrite()
	require.NoError(t, wiretest.Recv(t, ctx, served))
	assert.GreaterOrEqual(t, time.Since(ended), bound, "answered before the bound")
	got := p.RestAnswers(ctx)
	require.Len(t, got, 2)
	assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(got["1"].Result))
	assert.Equal(t, int64(acprpc.CodeRequestCancelled), got["2"].Code())

	warning := log.AwaitLogged(t, ctx, slog.LevelWarn, "Options.InputEndGrace")
	assert.Equal(t, "100ms", warning.Attrs["grace"])
	assert.Contains(t, []string{"session/prompt", "x/other"}, warning.Attrs["method"])
	releaseOnce.Do(func() { close(release) })
	late := log.AwaitLogged(t, ctx, slog.LevelInfo, "has returned after its request was answered cancelled at the end of the peer's input")
	assert.Contains(t, []string{"session/prompt", "x/other"}, late.Attrs["method"])
}

// The end of input over and over, with a few requests in flight each time,
// in a loop bounded in rounds and time: each is answered with its result,
// once, before Serve returns.
func TestInputEndStress(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	deadline := time.Now().Add(20 * time.Second)
	for round := 0; round < rounds && time.Now().Before(deadline); round++ {
		ctx := wiretest.Context(t)
		n := 1 + round%5
		p, served := serveWatched(t, afterTheEnd, nil)
		sendThenEnd(p, n, "x/slow")
		require.NoError(t, wiretest.Recv(t, ctx, served))
		got := p.RestAnswers(ctx)
		require.Len(t, got, n, "round %d", round)
		for id, m := range got {
			require.JSONEq(t, fmt.Sprintf(`{"done":%q}`, id), string(m.Result), "round %d", round)
		}
		p.Close()
	}
}

// A handler's call to the peer is pending when the peer's input ends: no
// answer can come any more, so the call fails at once, with an error that
// says the connection closed because the peer's output ended (not a
// cancel), while the connection is still open to write the answer; and
// its request is cut short by that end: the prompt is answered with its
// cancelled marker at once, not once InputEndGrace has passed. The call
// used to end only with the close, and the answer made the closing flush
// or not, by chance.
func TestInputEndCallPendingFailsAtOnce(t *testing.T) {
	ctx := wiretest.Context(t)
	callErr, connErr := make(chan error, 1), make(chan error, 1)
	asks := func(*wiretest.EOFWatch) acprpc.Handler {
		return acprpc.HandlerFunc(func(hctx context.Context, req *acprpc.Request) (any, error) {
			conn := acprpc.ConnFromContext(hctx)
			err := conn.Call(hctx, "session/request_permission", map[string]string{"sessionId": "s"}, nil)
			callErr <- err
			connErr <- conn.Err()
			return nil, err
		})
	}
	p, served := serveWatched(t, asks, &acprpc.Options{InputEndGrace: time.Hour})
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.ExpectRequest(ctx, "session/request_permission")
	p.CloseWrite()
	err := wiretest.Recv(t, ctx, callErr)
	require.ErrorIs(t, err, acprpc.ErrConnClosed)
	require.ErrorIs(t, err, io.EOF)
	require.NotErrorIs(t, err, acprpc.ErrCancelled)
	require.NoError(t, wiretest.Recv(t, ctx, connErr), "the call ended with the connection, not at the end of input")
	require.NoError(t, wiretest.Recv(t, ctx, served))
	got := p.RestAnswers(ctx)
	require.Len(t, got, 1)
	assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(got["1"].Result))
}

// A handler sends notifications once the peer's input has ended, then its
// result: the peer reads every one, in order, before the answer, and all
// before Serve returns.
func TestInputEndNotificationsQueuedBeforeTheAnswerAreWritten(t *testing.T) {
	ctx := wiretest.Context(t)
	const updates = 100
	chatty := func(w *wiretest.EOFWatch) acprpc.Handler {
		return acprpc.HandlerFunc(func(hctx context.Context, req *acprpc.Request) (any, error) {
			<-w.Seen()
			for i := range updates {
				if err := acprpc.ConnFromContext(hctx).Notify(hctx, "session/update", map[string]any{"sessionId": "s", "n": i}); err != nil {
					return nil, err
				}
			}
			return map[string]string{"done": req.ID.String()}, nil
		})
	}
	p, served := serveWatched(t, chatty, nil)
	sendThenEnd(p, 1, "x/chatty")
	require.NoError(t, wiretest.Recv(t, ctx, served))
	rest := p.Rest(ctx)
	require.Len(t, rest, updates+1)
	for i, m := range rest[:updates] {
		require.True(t, m.IsNotification(), "line %d: %s", i, m.Raw)
		require.Equal(t, fmt.Sprint(i), string(m.ParamMember("n")))
	}
	assert.True(t, rest[updates].IsAnswerTo("1"), "the last line: %s", rest[updates].Raw)
}

// The peer has closed the Conn's output (it reads nothing, a write fails
// with EPIPE) and its input ends with requests in flight, one of them deaf
// to its context. Serve does not wait out InputEndGrace for answers no one
// can read: the first answer's write fails, which closes the connection,
// and Serve returns, saying so.
func TestInputEndWithTheOutputClosedByThePeer(t *testing.T) {
	ctx := wiretest.Context(t)
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, outR.Close()) // writes to outW now fail with EPIPE
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	h := wiretest.Mux{
		"x/quick": func(context.Context, *acprpc.Request) (any, error) { return "ok", nil },
		"x/deaf": func(context.Context, *acprpc.Request) (any, error) {
			<-release
			return nil, nil
		},
	}
	lines := wiretest.RequestLine("0", "x/deaf", `{}`) + "\n"
	for i := 1; i <= 10; i++ {
		lines += wiretest.RequestLine(fmt.Sprint(i), "x/quick", `{}`) + "\n"
	}
	_, err = io.WriteString(inW, lines) // all in the pipe's buffer before Serve starts, which closes inR
	require.NoError(t, err)
	require.NoError(t, inW.Close())
	served := make(chan error, 1)
	go func() {
		served <- acprpc.Serve(context.Background(), acprpc.NewStreamPipes(inR, outW), h, &acprpc.Options{InputEndGrace: time.Hour})
	}()
	err = wiretest.Recv(t, ctx, served)
	require.ErrorIs(t, err, acprpc.ErrConnClosed)
	assert.ErrorIs(t, err, syscall.EPIPE)
}

// goneAtEOF is a transport whose end of input says the peer is gone: it
// reads nothing more either, as a process that has exited.
type goneAtEOF struct{ acprpc.Transport }

func (g goneAtEOF) Recv() ([]byte, error) {
	msg, err := g.Transport.Recv()
	if errors.Is(err, io.EOF) {
		err = peerGoneError{err}
	}
	return msg, err
}

type peerGoneError struct{ error }

func (e peerGoneError) Unwrap() error { return e.error }
func (peerGoneError) PeerGone() bool  { return true }

// When the transport says the peer is gone with its input, no answer can
// reach it: the requests in flight are not waited for (InputEndGrace is an
// hour here), their handlers' contexts end with the close, and Serve
// returns nil, the peer having left.
func TestInputEndPeerGoneIsNotWaitedFor(t *testing.T) {
	ctx := wiretest.Context(t)
	conn, p := wiretest.RawPipe(t)
	entered, cause := make(chan struct{}), make(chan error, 1)
	h := acprpc.HandlerFunc(func(hctx context.Context, req *acprpc.Request) (any, error) {
		close(entered)
		<-hctx.Done()
		cause <- context.Cause(hctx)
		return nil, hctx.Err()
	})
	served := make(chan error, 1)
	go func() {
		served <- acprpc.Serve(context.Background(), goneAtEOF{acprpc.NewStream(conn)}, h, &acprpc.Options{InputEndGrace: time.Hour})
	}()
	p.Request("1", "x/dialog", "")
	wiretest.Recv(t, ctx, entered)
	p.CloseWrite()
	require.ErrorIs(t, wiretest.Recv(t, ctx, cause), acprpc.ErrConnClosed)
	require.NoError(t, wiretest.Recv(t, ctx, served))
}
