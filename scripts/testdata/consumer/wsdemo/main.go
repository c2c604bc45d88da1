// Command wsdemo is the module proxy test's program on remote: it serves an
// agent over WebSocket on a loopback port, dials it, sends one prompt and
// prints the agent's reply, all through the released modules' public API.
// scripts/modproxy.sh builds it in a fresh module (testdata keeps it out of
// the repository's own modules).
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/remote"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wsdemo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := remote.NewServer(remote.Handle(agent.Router(), nil), nil)
	go srv.Serve(l)
	defer srv.Close()

	t, err := remote.Dial(ctx, "ws://"+l.Addr().String()+remote.DefaultPath, nil)
	if err != nil {
		return err
	}
	replies := make(chan string, 1)
	client := acpv1.Client{SessionUpdate: func(_ context.Context, n acpv1.SessionNotification) {
		if text, ok := acpv1.AgentTextOf(n.Update); ok {
			replies <- text
		}
	}}
	conn := acprpc.NewConn(ctx, t, client.Router(), nil)
	defer conn.Close()
	if _, err := acpv1.ToAgent.Initialize.Call(ctx, conn, acpv1.InitializeRequest{ProtocolVersion: acpv1.Version}); err != nil {
		return err
	}
	session, err := acpv1.ToAgent.SessionNew.Call(ctx, conn, acpv1.NewSessionRequest{Cwd: "/"})
	if err != nil {
		return err
	}
	if _, err := acpv1.ToAgent.SessionPrompt.Call(ctx, conn, acpv1.TextPrompt(session.SessionID, "hello over WebSocket")); err != nil {
		return err
	}
	fmt.Println(<-replies)
	return nil
}

var agent = acpv1.Agent{SessionPrompt: func(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
	reply := acpv1.AgentText(p.SessionID, "You said: "+acpv1.TextOf(p.Prompt))
	err := acpv1.ToClient.SessionUpdate.Notify(ctx, acprpc.ConnFromContext(ctx), reply)
	return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, err
}}
