// Command client is the smallest ACP client that cancels a turn: it starts
// the agent given as its arguments, sends it a prompt, cancels the turn
// with session/cancel as soon as the agent's first message arrives, and
// prints the turn's stop reason, "cancelled". Run it against the agent
// beside it:
//
//	go run ./examples/cancel/client go run ./examples/cancel/agent
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/agentproc"
)

func main() {
	if err := run(context.Background(), os.Stdout, exec.Command(os.Args[1], os.Args[2:]...)); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, agent *exec.Cmd) error {
	var cancelOnce sync.Once
	client := acpv1.Client{SessionUpdate: func(ctx context.Context, n acpv1.SessionNotification) {
		if text, ok := acpv1.AgentTextOf(n.Update); ok {
			fmt.Fprintln(out, "agent:", text)
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
		res, err := acpv1.ToAgent.SessionPrompt.Call(ctx, conn, acpv1.TextPrompt(session.SessionID, "count to a hundred"))
		if err != nil {
			return err
		}
		fmt.Fprintln(out, "stop reason:", res.StopReason)
		return nil
	})
}
