package agentproc

import (
	"context"
	"errors"
	"os/exec"

	"github.com/acpkit/acprpc"
)

// Run starts cmd as an agent served by h on this side, as Start does, calls
// f with ctx and the connection, and then ends the agent with Process.Close,
// also when f panics. It returns Start's error, or f's and Close's joined
// (errors.Join), so an agent that failed f by exiting says how it exited.
//
// An agent that needed SIGTERM once its stdin closed, as real agents do,
// has ended normally for a client that is done with it: Close's
// ErrTerminated is left out when the agent died of the signal or caught it
// and exited with status 0 (or 128+SIGTERM, a shell's way of saying so). An
// agent killed with SIGKILL, or one that exited with a failure, is an error.
// A client that wants to know how its agent ended in every case calls Start
// and Close itself.
func Run(ctx context.Context, cmd *exec.Cmd, h acprpc.Handler, opts *Options, f func(ctx context.Context, conn *acprpc.Conn) error) (err error) {
	proc, err := Start(ctx, cmd, h, opts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, endedBadly(proc.Close())) }() // also when f panics
	return f(ctx, proc.Conn)
}

// endedBadly is Close's error, unless the agent ended normally on SIGTERM.
func endedBadly(closeErr error) error {
	if errors.Is(closeErr, ErrTerminated) && tookSIGTERM(closeErr) {
		return nil
	}
	return closeErr
}
