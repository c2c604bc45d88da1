//go:build unix

package acprpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// inputEndChildEnv makes the test binary, started again by
// TestInputEndOverStdio, an agent served with ServeStdio: "typed" serves
// acpv1.Agent{}'s router, "slow" a handler that works 50 ms.
const inputEndChildEnv = "ACPRPC_INPUT_END_CHILD"

// An agent served with ServeStdio, run as a process the way a user runs
// one (printf '%s\n' "$request" | agent): its stdin ends right after the
// request. The request is answered, once, before the agent exits 0. Both
// used to fail: the typed agent's initialize was answered two runs in
// three, the 50 ms handler's request never.
func TestInputEndOverStdio(t *testing.T) {
	if mode := os.Getenv(inputEndChildEnv); mode != "" {
		os.Exit(inputEndChild(mode))
	}
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	cases := []struct{ mode, request, want string }{
		{"typed", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, ""},
		{"slow", `{"jsonrpc":"2.0","id":1,"method":"x/slow","params":{}}`, `{"done":"1"}`},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			for round := range rounds {
				ctx := wiretest.Context(t)
				out := runPiped(t, ctx, tc.mode, tc.request)
				lines := strings.FieldsFunc(out, func(r rune) bool { return r == '\n' })
				require.Len(t, lines, 1, "round %d: the agent wrote %q", round, out)
				var answer struct {
					ID     json.RawMessage
					Result json.RawMessage
				}
				require.NoError(t, json.Unmarshal([]byte(lines[0]), &answer))
				assert.Equal(t, "1", string(answer.ID))
				if tc.want != "" {
					assert.JSONEq(t, tc.want, string(answer.Result))
				} else {
					assert.Contains(t, string(answer.Result), `"protocolVersion":1`)
				}
			}
		})
	}
}

// runPiped runs the agent of mode as a shell pipeline whose printf writes
// request and ends, and returns what the agent wrote; it fails the test
// unless the agent exits 0.
func runPiped(t *testing.T, ctx context.Context, mode, request string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "sh", "-c", `printf '%s\n' "$REQUEST" | "$0" -test.run='^TestInputEndOverStdio$' -test.count=1`, os.Args[0])
	// Under the race detector a process sleeps a second before it exits,
	// unless told not to.
	cmd.Env = append(os.Environ(), inputEndChildEnv+"="+mode, "REQUEST="+request, "GORACE=atexit_sleep_ms=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "the agent says: %s", stderr.String())
	return stdout.String()
}

// inputEndChild is the agent: it serves its stdio until its stdin ends,
// and returns 0 if ServeStdio returned nil.
func inputEndChild(mode string) int {
	var h acprpc.Handler = acpv1.Agent{}.Router()
	if mode == "slow" {
		h = acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			work := time.NewTimer(50 * time.Millisecond)
			defer work.Stop()
			select {
			case <-work.C:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			return map[string]string{"done": req.ID.String()}, nil
		})
	}
	if err := acprpc.ServeStdio(context.Background(), h, nil); err != nil {
		fmt.Fprintln(os.Stderr, "ServeStdio:", err)
		return 6
	}
	return 0
}

// The client closes the agent's stdout (it reads nothing more) and then its
// stdin, with a request in flight. The answer's write fails: ServeStdio
// returns, with the write's error (EPIPE) or nil, whichever end closed the
// connection first, and the agent's own code runs on to its exit. Go's default for a write to a closed stdout is to kill the
// process with SIGPIPE, which used to end the agent there, its cleanup
// (its children, its sessions) never run.
func TestStdoutClosedByTheClient(t *testing.T) {
	ctx := wiretest.Context(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestInputEndOverStdio$", "-test.count=1")
	cmd.Env = append(os.Environ(), inputEndChildEnv+"=slow", "GORACE=atexit_sleep_ms=0")
	stdoutR, stdoutW, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = stdoutW
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	require.NoError(t, stdoutW.Close())
	require.NoError(t, stdoutR.Close()) // no one reads the agent's stdout any more
	_, err = fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"x/slow","params":{}}`)
	require.NoError(t, err)
	require.NoError(t, stdin.Close())
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) { // the write's failure closed the connection before the end of stdin did
		require.Equal(t, 6, exit.ExitCode(), "not ServeStdio's return (%v); the agent says: %s", exit, stderr.String())
		assert.Contains(t, stderr.String(), "broken pipe")
		return
	}
	require.NoError(t, err, "the agent says: %s", stderr.String())
}
