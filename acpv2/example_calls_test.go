package acpv2_test

import (
	"context"
	"fmt"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv2"
)

// A v2 agent and client, each a set of typed functions. The prompt is
// answered with its message's ID as soon as it is inserted; the turn runs
// on as the session's foreground Work, whose End sends the one idle
// state_update that tells the client the turn is over. (A whole v2 turn also
// reports running and echoes the prompt as the user's message:
// docs/versions.md lists what it owes.)
func ExampleAgent() {
	agent := acpv2.Agent{
		Info: acpv2.Implementation{Name: "hello", Version: "1.0.0"},
		SessionPrompt: func(ctx context.Context, p acpv2.PromptRequest) (acpv2.PromptResponse, error) {
			conn := acprpc.ConnFromContext(ctx)
			work, _ := acprpc.WorkFromContext(ctx) // on v2, every prompt's
			go func() {
				reply := acpv2.AgentText(p.SessionID, "msg_1_reply", "You said: "+acpv2.TextOf(p.Prompt))
				_ = acpv2.ToClient.SessionUpdate.Notify(work.Context(), conn, reply)
				_ = work.End("end_turn")
			}()
			return acpv2.PromptResponse{MessageID: "msg_1"}, nil
		},
	}
	texts, idle := make(chan string, 1), make(chan acpv2.StopReason, 1)
	client := acpv2.Client{SessionUpdate: func(_ context.Context, n acpv2.UpdateSessionNotification) {
		if text, ok := acpv2.AgentTextOf(n.Update); ok {
			texts <- text
		}
		if state, ok := n.Update.Value.(acpv2.StateUpdate); ok {
			if end, ok := state.Value.(acpv2.IdleStateUpdate); ok {
				idle <- end.StopReason
			}
		}
	}}

	ctx := context.Background()
	agentEnd, clientEnd := acprpc.Pipe()
	defer acprpc.NewConn(ctx, agentEnd, agent.Router(), nil).Close() // the agent, served until the end
	conn := acprpc.NewConn(ctx, clientEnd, client.Router(), nil)
	defer conn.Close()

	res, err := prompt(ctx, conn, "hello")
	fmt.Println("inserted as", res.MessageID, err)
	fmt.Println(<-texts) // updates come in order: the reply, then the idle
	fmt.Println("idle:", <-idle)
	// Output:
	// inserted as msg_1 <nil>
	// You said: hello
	// idle: end_turn
}

// prompt opens a session on conn and sends it text: initialize, session/new
// and session/prompt, the client's three requests.
func prompt(ctx context.Context, conn *acprpc.Conn, text string) (acpv2.PromptResponse, error) {
	info := acpv2.Implementation{Name: "client", Version: "1.0.0"}
	if _, err := acpv2.ToAgent.Initialize.Call(ctx, conn, acpv2.InitializeRequest{ProtocolVersion: acpv2.Version, Info: info}); err != nil {
		return acpv2.PromptResponse{}, err
	}
	session, err := acpv2.ToAgent.SessionNew.Call(ctx, conn, acpv2.NewSessionRequest{Cwd: "/"})
	if err != nil {
		return acpv2.PromptResponse{}, err
	}
	return acpv2.ToAgent.SessionPrompt.Call(ctx, conn, acpv2.TextPrompt(session.SessionID, text))
}
