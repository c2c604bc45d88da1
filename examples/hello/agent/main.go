// Command agent is the smallest ACP agent: it answers each prompt with one
// message, "You said: ...", over stdio. docs/types.md counts its lines
// beside the same agent on the TypeScript SDK.
package main

import (
	"context"
	"os"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
)

func main() {
	conn := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(os.Stdin, os.Stdout), router(), nil)
	<-conn.Done()
}

func router() *acprpc.Router {
	r := acprpc.NewRouter()
	r.Register(acpv1.MethodInitialize, acprpc.RequestHandler(func(context.Context, acpv1.InitializeRequest) (acpv1.InitializeResponse, error) {
		return acpv1.InitializeResponse{ProtocolVersion: 1}, nil
	}))
	r.Register(acpv1.MethodSessionNew, acprpc.RequestHandler(func(context.Context, acpv1.NewSessionRequest) (acpv1.NewSessionResponse, error) {
		return acpv1.NewSessionResponse{SessionID: "sess_1"}, nil
	}))
	r.Register(acpv1.MethodSessionPrompt, acprpc.RequestHandler(func(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
		said := ""
		for _, block := range p.Prompt {
			if text, ok := block.Value.(acpv1.TextContent); ok {
				said += text.Text
			}
		}
		reply := acpv1.AgentMessageChunk{Content: acpv1.ContentBlock{Value: acpv1.TextContent{Text: "You said: " + said}}}
		err := acprpc.ConnFromContext(ctx).Notify(ctx, acpv1.MethodSessionUpdate,
			acpv1.SessionNotification{SessionID: p.SessionID, Update: acpv1.SessionUpdate{Value: reply}})
		return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, err
	}))
	return r
}
