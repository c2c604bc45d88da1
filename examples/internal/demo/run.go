package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/acpkit/acprpc"
)

// Session is a client's conversation with an agent subprocess.
type Session struct {
	// AgentPath is the agent binary (see BuildAgent).
	AgentPath string
	// AgentArgs are passed to it.
	AgentArgs []string
	// AgentStderr receives the agent's log; nil discards it.
	AgentStderr io.Writer
	// Recorder, if set, records the wire through the client's hooks.
	Recorder *Recorder
	// Log receives the client connection's diagnostics; nil discards them.
	Log *slog.Logger
	// Interrupt, when it is closed during the turn (a signal), shuts the
	// connection down gracefully: see ShutdownOn.
	Interrupt <-chan struct{}
}

// Run starts the agent, runs one turn with client over its stdin and stdout,
// then closes the agent's stdin and waits for it to exit, which must be with
// status 0.
func (s *Session) Run(ctx context.Context, client *Client, t Turn) (TurnResult, error) {
	stderr := s.AgentStderr
	if stderr == nil {
		stderr = io.Discard
	}
	proc, err := StartAgent(s.AgentPath, stderr, s.AgentArgs...)
	if err != nil {
		return TurnResult{}, err
	}
	opts := &acprpc.Options{Logger: s.Log}
	if s.Recorder != nil {
		opts.Hooks = s.Recorder.Hooks()
	}
	conn := acprpc.NewConn(ctx, acprpc.NewStreamPipes(proc.Stdout, proc.Stdin), client, opts)
	interrupted := ShutdownOn(s.Interrupt, conn)
	res, turnErr := client.RunTurn(ctx, conn, t)
	interrupted()

	// Closing the connection closes the agent's stdin: it must exit, with
	// status 0.
	conn.Close()
	client.Wait()
	if err := proc.Wait(); err != nil {
		var exit interface{ ExitCode() int }
		if errors.As(err, &exit) {
			err = fmt.Errorf("the agent exited with status %d", exit.ExitCode())
		}
		return res, errors.Join(turnErr, err)
	}
	return res, turnErr
}

// ShutdownWait bounds the graceful shutdown that an interrupt starts.
const ShutdownWait = 5 * time.Second

// ShutdownOn shuts conn down gracefully (acprpc.Conn.Shutdown) if interrupt
// is closed before the function it returns is called: the agent's requests
// in flight are answered as cancelled, the prompt gets its
// $/cancel_request, and the agent's answer, its stop reason, is still read.
// The function it returns waits for such a shutdown to finish.
func ShutdownOn(interrupt <-chan struct{}, conn *acprpc.Conn) (finished func()) {
	if interrupt == nil {
		return func() {}
	}
	done, over := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		select {
		case <-interrupt:
			grace, cancel := context.WithTimeout(context.Background(), ShutdownWait)
			defer cancel()
			_ = conn.Shutdown(grace)
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-over
	}
}
