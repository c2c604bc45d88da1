package acprpc

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
)

// This file runs a connection from its start to its end in one call: Serve
// and ServeStdio for an agent, WithAgent for a client. Each is NewConn or
// StartAgent, a wait and a close, for programs that need nothing between.

// Serve serves the peer over t with h until the connection closes, and
// returns nil if it closed because the peer's input ended (the peer left),
// or else why it closed (Conn.Err), such as ctx ending. ctx is the
// connection's, as for NewConn: when it ends the connection closes at once;
// a program that wants the graceful end calls Shutdown on a Conn of its own.
func Serve(ctx context.Context, t Transport, h Handler, opts *Options) error {
	conn := NewConn(ctx, t, h, opts)
	<-conn.Done()
	if err := conn.Err(); !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// ServeStdio is an agent's whole life over stdio: Serve over os.Stdin and
// os.Stdout, until the client closes the agent's stdin. Both are closed
// when it returns, so what the agent writes after it belongs on stderr.
//
//	func main() { acprpc.ServeStdio(context.Background(), router, nil) }
func ServeStdio(ctx context.Context, h Handler, opts *Options) error {
	return Serve(ctx, NewStreamPipes(os.Stdin, os.Stdout), h, opts)
}

// WithAgent starts cmd as an agent served by h on this side, as StartAgent
// does, calls f with ctx and the connection, and then ends the agent with
// AgentProcess.Close, also when f panics. It returns StartAgent's error, or f's and Close's
// joined (errors.Join), so an agent that failed f by exiting says how it
// exited.
func WithAgent(ctx context.Context, cmd *exec.Cmd, h Handler, opts *ProcessOptions, f func(ctx context.Context, conn *Conn) error) (err error) {
	proc, err := StartAgent(ctx, cmd, h, opts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, proc.Close()) }() // also when f panics
	return f(ctx, proc.Conn)
}
