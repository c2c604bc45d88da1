//go:build unix

package agentproc_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/agentproc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Run runs f against the agent and ends it; an agent on ServeStdio
// exits 0 once its stdin closes, so nothing fails.
func TestRunAndServeStdio(t *testing.T) {
	ctx := wiretest.Context(t)
	var echoed map[string]string
	err := agentproc.Run(ctx, helperAgent("stdio"), nil, nil, func(ctx context.Context, conn *acprpc.Conn) error {
		var err error
		echoed, err = acprpc.CallFor[map[string]string](ctx, conn, "echo", map[string]string{"sessionId": "hi"})
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"sessionId": "hi"}, echoed)
}

// Run returns f's error joined with Close's: an agent that exited
// under f says how.
func TestRunJoinsErrors(t *testing.T) {
	ctx := wiretest.Context(t)
	errF := errors.New("f failed")
	err := agentproc.Run(ctx, helperAgent("exit-early"), nil, nil, func(ctx context.Context, conn *acprpc.Conn) error {
		<-conn.Done()
		return errF
	})
	require.ErrorIs(t, err, errF)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 3, exit.ExitCode())
}

// Run returns Start's error without calling f.
func TestRunStartFails(t *testing.T) {
	ctx := wiretest.Context(t)
	cmd := helperAgent("stdio")
	cmd.Stdin = new(errReader)
	called := false
	err := agentproc.Run(ctx, cmd, nil, nil, func(context.Context, *acprpc.Conn) error {
		called = true
		return nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Stdin and Stdout must be nil")
	assert.False(t, called)
}

// errReader is an io.Reader that Start must refuse as the agent's stdin.
type errReader struct{}

func (*errReader) Read([]byte) (int, error) { return 0, errors.New("unread") }

// A panic in f still ends the agent, and goes on up to Run's caller.
func TestRunEndsTheAgentWhenFPanics(t *testing.T) {
	ctx := wiretest.Context(t)
	var conn *acprpc.Conn
	recovered := func() (r any) {
		defer func() { r = recover() }()
		_ = agentproc.Run(ctx, helperAgent("stdio"), nil, nil, func(_ context.Context, c *acprpc.Conn) error {
			conn = c
			panic("f failed")
		})
		return nil
	}()
	assert.Equal(t, "f failed", recovered)
	require.NotNil(t, conn)
	wiretest.Recv(t, ctx, conn.Done())
}

// An agent that needed SIGTERM once its stdin closed, as real agents do,
// ended normally for a client that is done with it: Run returns f's error
// alone, nil here. One killed with SIGKILL, or one that caught SIGTERM and
// exited with a failure, did not end normally.
func TestRunAnAgentThatNeededSIGTERM(t *testing.T) {
	errF := errors.New("f failed")
	for _, tc := range []struct {
		name, mode     string
		fErr           error
		killed, failed bool
	}{
		{"died of SIGTERM", "lingers", nil, false, false},
		{"caught SIGTERM and exited 0", "tends-child", nil, false, false},
		{"caught SIGTERM and exited 1", "fails-on-term", nil, false, true},
		{"f failed", "lingers", errF, false, false},
		{"ignored SIGTERM", "ignore-eof", nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			opts := &agentproc.Options{ExitTimeout: time.Millisecond, TermTimeout: 100 * time.Millisecond}
			err := agentproc.Run(ctx, helperAgent(tc.mode), nil, opts, func(ctx context.Context, conn *acprpc.Conn) error {
				echo(t, ctx, conn)
				return tc.fErr
			})
			switch {
			case tc.killed:
				require.ErrorIs(t, err, agentproc.ErrKilled)
			case tc.failed:
				require.ErrorIs(t, err, agentproc.ErrTerminated)
				var exit *exec.ExitError
				require.ErrorAs(t, err, &exit)
				assert.Equal(t, 1, exit.ExitCode())
			case tc.fErr != nil:
				require.ErrorIs(t, err, tc.fErr)
				assert.NotErrorIs(t, err, agentproc.ErrTerminated)
			default:
				require.NoError(t, err)
			}
		})
	}
}
