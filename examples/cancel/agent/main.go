// Command agent is the agent of examples/cancel: it answers each prompt by
// counting, one message every 100 ms, until the client cancels the turn,
// and then ends it with the stop reason "cancelled".
package main

import (
	"context"
	"log"
	"strconv"
	"time"

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
	conn := acprpc.ConnFromContext(ctx)
	for i := 1; i <= 100; i++ {
		if err := acpv1.ToClient.SessionUpdate.Notify(ctx, conn, acpv1.AgentText(p.SessionID, strconv.Itoa(i))); err != nil {
			return acpv1.PromptResponse{}, err // cancelled: the library answers {"stopReason":"cancelled"}
		}
		select {
		case <-ctx.Done(): // the client's session/cancel ends the turn's context
			return acpv1.PromptResponse{StopReason: acpv1.StopReasonCancelled}, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
	return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, nil
}}
