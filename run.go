package acprpc

import (
	"context"
	"errors"
	"io"
	"os"
)

// This file runs an agent's connection from its start to its end in one
// call: Serve and ServeStdio are NewConn, a wait and a close, for programs
// that need nothing between. A client's counterpart, which starts the agent
// as a subprocess, is agentproc.Run.

// Serve serves the peer over t with h until the connection closes, and
// returns nil if it closed because the peer's input ended (the peer left),
// or else why it closed (Conn.Err), such as ctx ending. Every request read
// before the peer's input ended is answered before it returns (see
// Options.InputEndGrace), and what was queued for the peer is written, or
// given up on a peer that stopped reading, before the transport closes and
// Serve returns: a program may exit as soon as it does. ctx is the
// connection's, as for NewConn: when it ends the connection closes at once;
// a program that wants the graceful end calls Shutdown on a Conn of its own.
func Serve(ctx context.Context, t Transport, h Handler, opts *Options) error {
	conn := NewConn(ctx, t, h, opts)
	<-conn.Done()
	_ = conn.Close() // what was queued before the close is written, and the transport closed
	if err := conn.Err(); !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// ServeStdio is an agent's whole life over stdio: Serve over os.Stdin and
// os.Stdout, until the client closes the agent's stdin. Both are closed
// when it returns, so what the agent writes after it belongs on stderr.
//
// While it serves, a write to a stdout the client has closed fails (EPIPE)
// instead of killing the process with SIGPIPE, Go's default for standard
// output on Unix: the connection closes, ServeStdio returns (the write's
// error, or nil if the end of stdin closed it first), and the agent's own
// code runs on to its exit (its children ended, its sessions saved).
//
//	func main() { acprpc.ServeStdio(context.Background(), router, nil) }
func ServeStdio(ctx context.Context, h Handler, opts *Options) error {
	defer failWritesToClosedStdout()()
	return Serve(ctx, NewStreamPipes(os.Stdin, os.Stdout), h, opts)
}
