// Command client is the smallest ACP client: it starts the agent given as
// its arguments, sends it one prompt, "hello", and prints the agent's
// messages. docs/types.md counts its lines beside the same client on the
// TypeScript SDK.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"

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
	client := acpv1.Client{SessionUpdate: func(_ context.Context, n acpv1.SessionNotification) {
		if text, ok := acpv1.AgentTextOf(n.Update); ok {
			fmt.Fprintln(out, text)
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
		_, err = acpv1.ToAgent.SessionPrompt.Call(ctx, conn, acpv1.TextPrompt(session.SessionID, "hello"))
		return err
	})
}
