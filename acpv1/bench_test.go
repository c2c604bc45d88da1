package acpv1_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// What the generated types cost beside types written by hand for the few
// members a program reads: decoding a 1 MiB prompt, and a whole typed
// prompt turn. benchstat -col /types; docs/typed-methods.md has the figures.

// The hand-written shapes: what a program declares when it reads only the
// prompt's text, as the demo once did.
type (
	handBlock struct {
		Type string `json:"type"`
		Text string `json:"text,omitempty"`
	}
	handPrompt struct {
		SessionID string      `json:"sessionId"`
		Prompt    []handBlock `json:"prompt"`
	}
	handResult struct {
		StopReason string `json:"stopReason"`
	}
	handUpdate struct {
		SessionUpdate string     `json:"sessionUpdate"`
		Content       *handBlock `json:"content,omitempty"`
	}
	handNotification struct {
		SessionID string     `json:"sessionId"`
		Update    handUpdate `json:"update"`
	}
)

// benchTexts are the 1 MiB prompts of the root package's decode
// benchmarks: prose, with nothing to unescape, and source code, whose
// escapes are the decoder's slower path.
var benchTexts = map[string]string{
	"prose": strings.Repeat("The quick brown fox jumps over the lazy dog. ", (1<<20)/45),
	"code":  strings.Repeat("func main() {\n\tfmt.Println(\"héllo, wörld\") // <tag> & \\path\n}\n", (1<<20)/64),
}

func promptParams(b *testing.B, text string) json.RawMessage {
	b.Helper()
	p, err := json.Marshal(acpv1.PromptRequest{SessionID: "s1",
		Prompt: []acpv1.ContentBlock{{Value: acpv1.TextContent{Text: text}}}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// promptHandlers serve session/prompt with a Router's typed handler, for
// each set of types; each checks the text arrived whole.
func promptHandlers(want int) map[string]acprpc.Handler {
	hand := acprpc.NewRouter()
	hand.Register(acpv1.MethodSessionPrompt, acprpc.RequestHandler(func(_ context.Context, p handPrompt) (handResult, error) {
		if len(p.Prompt) != 1 || len(p.Prompt[0].Text) != want {
			return handResult{}, errors.New("the prompt did not decode whole")
		}
		return handResult{StopReason: "end_turn"}, nil
	}))
	generated := acprpc.NewRouter()
	generated.Register(acpv1.MethodSessionPrompt, acprpc.RequestHandler(func(_ context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
		if text, ok := p.Prompt[0].Value.(acpv1.TextContent); len(p.Prompt) != 1 || !ok || len(text.Text) != want {
			return acpv1.PromptResponse{}, errors.New("the prompt did not decode whole")
		}
		return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, nil
	}))
	return map[string]acprpc.Handler{"hand-written": hand, "acpv1": generated}
}

var typesOrder = []string{"hand-written", "acpv1"}

// BenchmarkDecode1MiB decodes a 1 MiB session/prompt through a Router's
// typed handler, called directly: no connection. MB/s is over the params.
func BenchmarkDecode1MiB(b *testing.B) {
	for _, textName := range []string{"prose", "code"} {
		text := benchTexts[textName]
		params := promptParams(b, text)
		handlers := promptHandlers(len(text))
		for _, types := range typesOrder {
			b.Run("text="+textName+"/types="+types, func(b *testing.B) {
				req := &acprpc.Request{ID: acprpc.Int64ID(1), Method: acpv1.MethodSessionPrompt, Params: params}
				b.SetBytes(int64(len(params)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := handlers[types].Handle(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkTypedTurn is a prompt turn over os.Pipe with typed code on both
// sides: the client calls session/prompt with a one-line prompt; the agent
// decodes it, sends one agent_message_chunk and answers end_turn; the
// client decodes the update and the answer.
func BenchmarkTypedTurn(b *testing.B) {
	b.Run("types=hand-written", func(b *testing.B) {
		agent := acprpc.NewRouter()
		agent.Register(acpv1.MethodSessionPrompt, acprpc.RequestHandler(func(ctx context.Context, p handPrompt) (handResult, error) {
			update := handNotification{SessionID: p.SessionID, Update: handUpdate{SessionUpdate: "agent_message_chunk",
				Content: &handBlock{Type: "text", Text: "hello"}}}
			_ = acprpc.ConnFromContext(ctx).Notify(ctx, acpv1.MethodSessionUpdate, update)
			return handResult{StopReason: "end_turn"}, nil
		}))
		var got string
		client := acprpc.NewRouter()
		client.Register(acpv1.MethodSessionUpdate, acprpc.NotificationHandler(func(_ context.Context, n handNotification) {
			if n.Update.Content != nil {
				got = n.Update.Content.Text
			}
		}))
		conn := wiretest.NewWire(b, wiretest.Side{Handler: agent}, wiretest.Side{Handler: client}).B
		prompt := handPrompt{SessionID: "s1", Prompt: []handBlock{{Type: "text", Text: "hi"}}}
		b.ReportAllocs()
		for b.Loop() {
			res, err := acprpc.CallFor[handResult](context.Background(), conn, acpv1.MethodSessionPrompt, prompt)
			if err != nil || res.StopReason != "end_turn" || got != "hello" {
				b.Fatal(res, err, got)
			}
		}
	})
	b.Run("types=acpv1", func(b *testing.B) {
		agent := acprpc.NewRouter()
		agent.Register(acpv1.MethodSessionPrompt, acprpc.RequestHandler(func(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
			update := acpv1.SessionNotification{SessionID: p.SessionID, Update: acpv1.SessionUpdate{
				Value: acpv1.AgentMessageChunk{Content: acpv1.ContentBlock{Value: acpv1.TextContent{Text: "hello"}}}}}
			_ = acprpc.ConnFromContext(ctx).Notify(ctx, acpv1.MethodSessionUpdate, update)
			return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, nil
		}))
		var got string
		client := acprpc.NewRouter()
		client.Register(acpv1.MethodSessionUpdate, acprpc.NotificationHandler(func(_ context.Context, n acpv1.SessionNotification) {
			if chunk, ok := n.Update.Value.(acpv1.AgentMessageChunk); ok {
				text, _ := chunk.Content.Value.(acpv1.TextContent)
				got = text.Text
			}
		}))
		conn := wiretest.NewWire(b, wiretest.Side{Handler: agent}, wiretest.Side{Handler: client}).B
		prompt := acpv1.PromptRequest{SessionID: "s1", Prompt: []acpv1.ContentBlock{{Value: acpv1.TextContent{Text: "hi"}}}}
		b.ReportAllocs()
		for b.Loop() {
			res, err := acprpc.CallFor[acpv1.PromptResponse](context.Background(), conn, acpv1.MethodSessionPrompt, prompt)
			if err != nil || res.StopReason != acpv1.StopReasonEndTurn || got != "hello" {
				b.Fatal(res, err, got)
			}
		}
	})
}
