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
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, agent []string) error {
	r := acprpc.NewRouter()
	r.Register(acpv1.MethodSessionUpdate, acprpc.NotificationHandler(func(_ context.Context, n acpv1.SessionNotification) {
		if chunk, ok := n.Update.Value.(acpv1.AgentMessageChunk); ok {
			if text, ok := chunk.Content.Value.(acpv1.TextContent); ok {
				fmt.Fprintln(out, text.Text)
			}
		}
	}))
	proc, err := acprpc.StartAgent(ctx, exec.Command(agent[0], agent[1:]...), r, nil)
	if err != nil {
		return err
	}
	defer proc.Close()
	conn := proc.Conn
	_, err = acprpc.CallFor[acpv1.InitializeResponse](ctx, conn, acpv1.MethodInitialize, acpv1.InitializeRequest{ProtocolVersion: 1})
	if err != nil {
		return err
	}
	session, err := acprpc.CallFor[acpv1.NewSessionResponse](ctx, conn, acpv1.MethodSessionNew, acpv1.NewSessionRequest{Cwd: "/"})
	if err != nil {
		return err
	}
	prompt := acpv1.PromptRequest{SessionID: session.SessionID, Prompt: []acpv1.ContentBlock{{Value: acpv1.TextContent{Text: "hello"}}}}
	_, err = acprpc.CallFor[acpv1.PromptResponse](ctx, conn, acpv1.MethodSessionPrompt, prompt)
	return err
}
