package remotebench

import (
	"context"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/bench"
	"github.com/acpkit/acprpc/remote"
)

// The workload's prompt texts and how many updates a turn sends.
const (
	// TextTurn is a whole turn: Updates session/update notifications, then
	// {"stopReason":"end_turn"}.
	TextTurn = "hello"
	// TextWait is a turn that sends one session/update and waits for its
	// cancel, then answers {"stopReason":"cancelled"}.
	TextWait = "wait"
	// Updates is how many session/update notifications a TextTurn sends.
	Updates = 3
	// UpdateText is the text of every session/update.
	UpdateText = "hi"
)

// NewServer returns the workload's agent on acprpc, served by a
// remote.Server with its defaults: one Conn per connection, the typed
// acpv1.Agent with the defaults of initialize and session/new, and
// session/cancel left to the Conn, which ends the session's turn.
func NewServer() *remote.Server {
	agent := acpv1.Agent{SessionPrompt: prompt}
	return remote.NewServer(remote.Handle(agent.Router(), nil), nil)
}

func prompt(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
	conn := acprpc.ConnFromContext(ctx)
	update := acpv1.AgentText(p.SessionID, UpdateText)
	if acpv1.TextOf(p.Prompt) != TextWait {
		for range Updates {
			if err := acpv1.ToClient.SessionUpdate.Notify(ctx, conn, update); err != nil {
				return acpv1.PromptResponse{}, err
			}
		}
		return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, nil
	}
	if err := acpv1.ToClient.SessionUpdate.Notify(ctx, conn, update); err != nil {
		return acpv1.PromptResponse{}, err
	}
	<-ctx.Done() // session/cancel for the session, or $/cancel_request for the prompt
	return acpv1.PromptResponse{StopReason: acpv1.StopReasonCancelled}, nil
}

// NewStreamServer returns the stream workload's agent on acprpc
// (bench.AcprpcStream, with the default options), served by a
// remote.Server with its defaults: one Conn per connection.
func NewStreamServer() *remote.Server {
	h, opts := bench.AcprpcStream(nil)
	return remote.NewServer(remote.Handle(h, opts), nil)
}
