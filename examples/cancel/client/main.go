// Command client is the smallest ACP client that cancels a turn: it starts
// the agent given as its arguments, sends it a prompt, cancels the turn
// with session/cancel as soon as the agent's first message arrives, and
// prints the turn's stop reason, "cancelled". Run it against the agent
// beside it:
//
//	go run ./examples/cancel/client go run ./examples/cancel/agent
//
// With -deadline, the prompt's context has that deadline instead, as
// context.WithTimeout gives it, and the turn is cancelled when it passes:
// acprpc sends session/cancel for the prompt's session and returns the
// agent's stop reason, "cancelled" again.
//
//	go run ./examples/cancel/client -deadline 300ms go run ./examples/cancel/agent
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/agentproc"
)

func main() {
	deadline := flag.Duration("deadline", 0, "cancel the turn when this long has passed, by the prompt's context, instead of at the agent's first message")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: client [-deadline d] agent [args...]")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Stdout, exec.Command(flag.Arg(0), flag.Args()[1:]...), *deadline); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

// run has the conversation; a deadline of zero cancels the turn at the
// agent's first message.
func run(ctx context.Context, out io.Writer, agent *exec.Cmd, deadline time.Duration) error {
	var cancelOnce sync.Once
	client := acpv1.Client{SessionUpdate: func(ctx context.Context, n acpv1.SessionNotification) {
		if text, ok := acpv1.AgentTextOf(n.Update); ok {
			fmt.Fprintln(out, "agent:", text)
			if deadline > 0 {
				return // the deadline cancels the turn
			}
			// The turn is under way: cancel it. CancelSession only sends
			// session/cancel; the prompt's Call below gets the answer.
			cancelOnce.Do(func() { _ = acprpc.CancelSession(ctx, acprpc.ConnFromContext(ctx), n.SessionID) })
		}
	}}
	return agentproc.Run(ctx, agent, client.Router(), nil, func(ctx context.Context, conn *acprpc.Conn) error {
		if _, err := acpv1.ToAgent.Initialize.Call(ctx, conn, acpv1.InitializeRequest{ProtocolVersion: acpv1.Version}); err != nil {
			return err
		}
		session, err := acpv1.ToAgent.SessionNew.Call(ctx, conn, acpv1.NewSessionRequest{Cwd: "/"})
		if err != nil {
			return err
		}
		turnCtx := ctx
		if deadline > 0 {
			// When the deadline passes, the call sends session/cancel for
			// the session and waits (Options.TurnCancelWait) for the
			// agent's answer, whose stop reason it returns.
			var cancel context.CancelFunc
			turnCtx, cancel = context.WithTimeout(ctx, deadline)
			defer cancel()
		}
		res, err := acpv1.ToAgent.SessionPrompt.Call(turnCtx, conn, acpv1.TextPrompt(session.SessionID, "count to a hundred"))
		if err != nil {
			return err
		}
		fmt.Fprintln(out, "stop reason:", res.StopReason)
		return nil
	})
}
