// Command agent is the smallest ACP agent: it answers each prompt with one
// message, "You said: ...", over stdio. docs/types.md counts its lines
// beside the same agent on the TypeScript SDK.
package main

import (
	"context"
	"log"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
)

func main() {
	if err := acprpc.ServeStdio(context.Background(), agent.Router(), nil); err != nil {
		log.Fatal(err)
	}
}

// agent answers initialize and session/new with acpv1.Agent's defaults.
var agent = acpv1.Agent{SessionPrompt: func(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
	reply := acpv1.AgentText(p.SessionID, "You said: "+acpv1.TextOf(p.Prompt))
	err := acpv1.ToClient.SessionUpdate.Notify(ctx, acprpc.ConnFromContext(ctx), reply)
	return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, err
}}
