package bench

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
)

// decodeTexts are the 1 MiB prompts of the root's and acpv1's decode
// benchmarks: prose, with nothing to unescape, and source code, with an
// escape every few bytes.
var decodeTexts = map[string]string{
	"prose": strings.Repeat("The quick brown fox jumps over the lazy dog. ", (1<<20)/45),
	"code":  strings.Repeat("func main() {\n\tfmt.Println(\"héllo, wörld\") // <tag> & \\path\n}\n", (1<<20)/64),
}

// decoders decode the params of one session/prompt as each side that
// receives it does, and check that the text arrived whole: acprpc's Router
// with a typed handler of the workload's hand-written struct and of acpv1's
// generated PromptRequest, and coder's generated PromptRequest as its agent
// side decodes it (json.Unmarshal, then Validate).
func decoders(want int) map[string]func(params json.RawMessage) error {
	whole := errors.New("the prompt did not decode whole")
	hand := acprpc.NewRouter()
	hand.Register(MethodPrompt, acprpc.RequestHandler(func(_ context.Context, p PromptParams) (PromptResult, error) {
		if len(p.Prompt) != 1 || len(p.Prompt[0].Text) != want {
			return PromptResult{}, whole
		}
		return PromptResult{StopReason: StopEndTurn}, nil
	}))
	generated := acprpc.NewRouter()
	generated.Register(MethodPrompt, acprpc.RequestHandler(func(_ context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
		if text, ok := p.Prompt[0].Value.(acpv1.TextContent); len(p.Prompt) != 1 || !ok || len(text.Text) != want {
			return acpv1.PromptResponse{}, whole
		}
		return acpv1.PromptResponse{StopReason: acpv1.StopReasonEndTurn}, nil
	}))
	routed := func(r *acprpc.Router) func(json.RawMessage) error {
		return func(params json.RawMessage) error {
			_, err := r.Handle(context.Background(), &acprpc.Request{ID: acprpc.Int64ID(1), Method: MethodPrompt, Params: params})
			return err
		}
	}
	return map[string]func(json.RawMessage) error{
		"hand-written": routed(hand),
		"acpv1":        routed(generated),
		"coder": func(params json.RawMessage) error {
			var p acp.PromptRequest
			if err := json.Unmarshal(params, &p); err != nil {
				return err
			}
			if err := p.Validate(); err != nil {
				return err
			}
			if len(p.Prompt) != 1 || p.Prompt[0].Text == nil || len(p.Prompt[0].Text.Text) != want {
				return whole
			}
			return nil
		},
	}
}

// BenchmarkDecode1MiB decodes the params of a session/prompt holding 1 MiB
// of text, as each set of types is decoded on receipt; MB/s is over the
// params. The params are handed over as bytes, so acprpc's Router
// validates them first, as its connection's read loop does for a message.
func BenchmarkDecode1MiB(b *testing.B) {
	for _, textName := range []string{"prose", "code"} {
		text := decodeTexts[textName]
		params, err := json.Marshal(NewPrompt("s1", text))
		if err != nil {
			b.Fatal(err)
		}
		decode := decoders(len(text))
		for _, types := range []string{"hand-written", "acpv1", "coder"} {
			b.Run("text="+textName+"/types="+types, func(b *testing.B) {
				b.SetBytes(int64(len(params)))
				cpuLoop(b, func() {
					for i := 0; i < b.N; i++ {
						if err := decode[types](params); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}
