package acpv1_test

import (
	"context"
	"fmt"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
)

// An agent and a client, each a set of typed functions, in one turn: the
// agent writes only its prompt (Agent answers initialize and session/new
// itself), the client only what it does with the agent's messages, and
// each calls the other through ToAgent and ToClient. Over stdio the agent
// is acprpc.ServeStdio(ctx, agent.Router(), nil) and the client
// agentproc.Run(ctx, cmd, client.Router(), nil, f).
func ExampleAgent() {
	agent := acpv1.Agent{SessionPrompt: func(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
		reply := acpv1.AgentText(p.SessionID, "You said: "+acpv1.TextOf(p.Prompt))
		err := acpv1.ToClient.SessionUpdate.Notify(ctx, acprpc.ConnFromContext(ctx), reply)
		return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, err
	}}
	client := acpv1.Client{SessionUpdate: func(_ context.Context, n acpv1.SessionNotification) {
		if text, ok := acpv1.AgentTextOf(n.Update); ok {
			fmt.Println(text)
		}
	}}

	ctx := context.Background()
	agentEnd, clientEnd := acprpc.Pipe()
	agentConn := acprpc.NewConn(ctx, agentEnd, agent.Router(), nil)
	defer agentConn.Close()
	conn := acprpc.NewConn(ctx, clientEnd, client.Router(), nil)
	defer conn.Close()

	if _, err := acpv1.ToAgent.Initialize.Call(ctx, conn, acpv1.InitializeRequest{ProtocolVersion: acpv1.Version}); err != nil {
		fmt.Println(err)
		return
	}
	session, err := acpv1.ToAgent.SessionNew.Call(ctx, conn, acpv1.NewSessionRequest{Cwd: "/"})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := acpv1.ToAgent.SessionPrompt.Call(ctx, conn, acpv1.TextPrompt(session.SessionID, "hello"))
	fmt.Println(res.StopReason, err)
	// Output:
	// You said: hello
	// end_turn <nil>
}
