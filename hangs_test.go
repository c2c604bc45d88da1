package acprpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Hang tests: the ways a peer, a transport or an ordinary handler could make
// Close, Call or the read loop wait for good.

// hangChildEnv makes the test binary, started again by a test, play the
// child process that test needs.
const hangChildEnv = "ACPRPC_HANG_CHILD"

// hangCloseBound is how long Close may take in these tests; the flush wait
// and the bounded waits inside Close are well below it.
const hangCloseBound = 5 * time.Second

// An agent started by os/exec gets blocking stdio: closing its stdout does
// not interrupt a write in progress. With the parent no longer reading and
// a write stuck on a full pipe, Close still returns.
func TestHangCloseOnBlockingStdout(t *testing.T) {
	if os.Getenv(hangChildEnv) == "blocking-stdout" {
		hangChildBlockingStdout()
		return
	}
	ctx := wiretest.Context(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHangCloseOnBlockingStdout$", "-test.count=1")
	cmd.Env = append(os.Environ(), hangChildEnv+"=blocking-stdout")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	_, err = cmd.StdoutPipe() // never read: the child's writes fill the pipe and block
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	err = cmd.Wait()
	require.NoError(t, err, "the child says: %s", stderr.String())
}

// hangChildBlockingStdout is the agent: it serves its stdio, queues more than
// a pipe holds for a parent that never reads, and closes. It exits 0 if Close
// returned within the bound.
func hangChildBlockingStdout() {
	if err := os.Stdout.SetDeadline(time.Time{}); !errors.Is(err, os.ErrNoDeadline) {
		hangChildExit(4, "stdout is not a blocking file here (SetDeadline: %v)", err)
	}
	c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(os.Stdin, os.Stdout), nil, nil)
	err := c.Notify(context.Background(), "x/big", map[string]string{"pad": strings.Repeat("x", 1<<20)})
	if err != nil {
		hangChildExit(5, "notify: %v", err)
	}
	closed := make(chan struct{})
	go func() {
		_ = c.Close()
		close(closed)
	}()
	select {
	case <-closed:
		os.Exit(0)
	case <-time.After(hangCloseBound):
		hangChildExit(3, "Close did not return within %v with a write stuck on a blocking stdout", hangCloseBound)
	}
}

func hangChildExit(code int, format string, args ...any) {
	_, _ = io.WriteString(os.Stderr, strings.TrimSpace(fmt.Sprintf(format, args...))+"\n")
	os.Exit(code)
}

// The same with an output no close can reach: an io.MultiWriter (stdout and
// a log, say) is not an io.Closer. A write stuck in it does not hold Close.
func TestHangCloseOnWriterThatIsNotACloser(t *testing.T) {
	ctx := wiretest.Context(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // nobody reads outR until the end
	t.Cleanup(func() {
		_ = inW.Close()
		_ = outR.Close() // ends the stuck write, and with it the writer
	})
	writing := make(chan struct{})
	var once atomic.Bool
	signal := writerFunc(func(p []byte) (int, error) {
		if once.CompareAndSwap(false, true) {
			close(writing)
		}
		return len(p), nil
	})
	out := io.MultiWriter(signal, outW) // the signal first: then the write into the pipe, which blocks
	c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(inR, out), nil, nil)
	require.NoError(t, c.Notify(ctx, "x/big", map[string]string{"pad": strings.Repeat("x", 1<<20)}))
	wiretest.Recv(t, ctx, writing)
	closeWithin(t, c, hangCloseBound)
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// ACP's cancel shape: the agent's session/cancel handler waits for the
// cancelled turn to end; the turn's session/request_permission call (with
// WaitAfterCancel) gets its cancelled marker, which the client wrote after
// session/cancel. The call cannot have the notifications before its answer
// handled (the session/cancel handler waits for the turn), so it waits only
// as long as WaitAfterCancel lets it: the turn ends, the cancel handler
// returns, and a second turn in another session is not held behind it.
func TestHangBarrierAfterCancel(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		turnEnded := make(chan struct{})
		cancelHandled := make(chan struct{})
		prompt := func(ctx context.Context, req *acprpc.Request) (any, error) {
			var perm struct {
				Outcome struct {
					Outcome string `json:"outcome"`
				} `json:"outcome"`
			}
			err := acprpc.ConnFromContext(ctx).Call(ctx, "session/request_permission",
				map[string]string{"sessionId": req.SessionID}, &perm, acprpc.WaitAfterCancel(100*time.Millisecond))
			if req.SessionID == "s1" {
				defer close(turnEnded)
			}
			if err != nil {
				return nil, err
			}
			if perm.Outcome.Outcome == "cancelled" {
				return map[string]string{"stopReason": "cancelled"}, nil
			}
			return map[string]string{"stopReason": "end_turn"}, nil
		}
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"session/prompt": prompt,
			"session/cancel": func(ctx context.Context, _ *acprpc.Request) (any, error) {
				select {
				case <-turnEnded:
				case <-ctx.Done():
				}
				close(cancelHandled)
				return nil, nil
			},
		}, &acprpc.Options{CancelGrace: time.Minute}) // no grace timer answers for the turn

		p.Request("1", "session/prompt", `{"sessionId":"s1"}`)
		perm := p.ExpectRequest(ctx, "session/request_permission")
		p.Notify("session/cancel", `{"sessionId":"s1"}`)
		cancel := p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		assert.JSONEq(t, string(perm.ID), string(cancel.ParamMember("requestId")))
		p.Respond(string(perm.ID), `{"outcome":{"outcome":"cancelled"}}`)
		p.Request("2", "session/prompt", `{"sessionId":"s2"}`)

		answers := map[string]wiretest.Msg{}
		for len(answers) < 2 {
			m := p.Expect(ctx)
			switch {
			case m.IsRequest() && m.Method == "session/request_permission":
				p.Respond(string(m.ID), `{"outcome":{"outcome":"selected","optionId":"allow"}}`)
			case m.IsResponse():
				answers[string(m.ID)] = m
			default:
				t.Fatalf("unexpected line %s", m.Raw)
			}
		}
		assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(answers["1"].Result))
		assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(answers["2"].Result))
		wiretest.Recv(t, ctx, cancelHandled)
	})
}

// Every ending of a call goes through the barrier, an answer too large to
// keep included: Call does not return before a notification sent ahead of
// that answer has been handled.
func TestHangOverLongAnswerWaitsForBarrier(t *testing.T) {
	const limit = 1000
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		started, release := make(chan struct{}), make(chan struct{})
		var handled atomic.Bool
		c, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/slow": func(context.Context, *acprpc.Request) (any, error) {
				close(started)
				<-release
				handled.Store(true)
				return nil, nil
			},
			"x/ping": wiretest.Ping,
		}, &acprpc.Options{MaxMessageSize: limit})
		type outcome struct {
			err     error
			handled bool
		}
		done := make(chan outcome, 1)
		go func() {
			err := c.Call(ctx, "peer/big", nil, nil)
			done <- outcome{err, handled.Load()}
		}()
		req := p.ExpectRequest(ctx, "peer/big")
		p.Notify("x/slow", "")
		wiretest.Recv(t, ctx, started)
		p.Respond(string(req.ID), `"`+strings.Repeat("y", 2*limit)+`"`)
		p.Request("1", "x/ping", "")
		p.ExpectResult(ctx, "1", `"pong"`) // the over-long answer has been read
		select {
		case o := <-done:
			t.Fatalf("Call returned (%v) before the notification ahead of its answer was handled", o.err)
		default:
		}
		close(release)
		o := wiretest.Recv(t, ctx, done)
		assert.True(t, o.handled, "Call returned before the notification was handled")
		var rpcErr *acprpc.Error
		require.ErrorAs(t, o.err, &rpcErr)
		assert.Contains(t, rpcErr.Message, "too large")
	})
}
