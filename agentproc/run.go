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
func Run(ctx context.Context, cmd *exec.Cmd, h acprpc.Handler, opts *Options, f func(ctx context.Context, conn *acprpc.Conn) error) (err error) {
	proc, err := Start(ctx, cmd, h, opts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, proc.Close()) }() // also when f panics
	return f(ctx, proc.Conn)
}
