package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/acpkit/acprpc"
)

// The typed-decode benchmarks: what decoding a 1 MiB prompt costs, through
// the Router's typed handler and through a raw Handler, and what it adds to
// a whole round trip. docs/typed-methods.md has the figures and the choice
// of decoder they led to.

type decodeBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type decodePrompt struct {
	SessionID string        `json:"sessionId"`
	Prompt    []decodeBlock `json:"prompt"`
}

type decodeResult struct {
	StopReason string `json:"stopReason"`
}

// decodeTexts are two 1 MiB prompts: prose, whose string has nothing to
// unescape, and source code, whose newlines, tabs, quotes and non-ASCII
// letters are escaped on the wire, the decoder's slower path.
var decodeTexts = map[string]string{
	"prose": strings.Repeat("The quick brown fox jumps over the lazy dog. ", (1<<20)/45),
	"code":  strings.Repeat("func main() {\n\tfmt.Println(\"héllo, wörld\") // <tag> & \\path\n}\n", (1<<20)/64),
}

func decodeParams(b *testing.B, text string) json.RawMessage {
	b.Helper()
	p, err := json.Marshal(decodePrompt{SessionID: "s1", Prompt: []decodeBlock{{Type: "text", Text: text}}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// decodeHandlers are the ways an agent serves the prompt: not decoding it
// (the library's own cost), a raw Handler calling DecodeParams, and the
// Router's typed handler.
func decodeHandlers(want int) map[string]acprpc.Handler {
	check := func(p decodePrompt) (decodeResult, error) {
		if len(p.Prompt) != 1 || len(p.Prompt[0].Text) != want {
			return decodeResult{}, errors.New("the prompt did not decode whole")
		}
		return decodeResult{StopReason: "end_turn"}, nil
	}
	router := acprpc.NewRouter()
	router.Register("session/prompt", acprpc.RequestHandler(func(_ context.Context, p decodePrompt) (decodeResult, error) {
		return check(p)
	}))
	return map[string]acprpc.Handler{
		"none": acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) {
			return decodeResult{StopReason: "end_turn"}, nil
		}),
		"raw": acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
			var p decodePrompt
			if err := req.DecodeParams(&p); err != nil {
				return nil, err
			}
			return check(p)
		}),
		"router": router,
	}
}

var decodeOrder = []string{"none", "raw", "router"}

// BenchmarkDecode1MiB calls each handler directly with a 1 MiB
// session/prompt: the decode alone, no connection. MB/s is over the params.
func BenchmarkDecode1MiB(b *testing.B) {
	for _, textName := range []string{"prose", "code"} {
		text := decodeTexts[textName]
		params := decodeParams(b, text)
		handlers := decodeHandlers(len(text))
		for _, name := range decodeOrder {
			b.Run("text="+textName+"/handler="+name, func(b *testing.B) {
				req := &acprpc.Request{ID: acprpc.Int64ID(1), Method: "session/prompt", Params: params}
				h := handlers[name]
				b.SetBytes(int64(len(params)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := h.Handle(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPromptTurn1MiB is a whole session/prompt round trip with 1 MiB of
// params over os.Pipe, as between a client and its agent subprocess: the
// client encodes, the agent frames, validates and (or not) decodes, and
// answers.
func BenchmarkPromptTurn1MiB(b *testing.B) {
	for _, textName := range []string{"prose", "code"} {
		text := decodeTexts[textName]
		params := decodeParams(b, text)
		handlers := decodeHandlers(len(text))
		for _, name := range decodeOrder {
			b.Run("text="+textName+"/handler="+name, func(b *testing.B) {
				client := decodeConns(b, handlers[name])
				b.SetBytes(int64(len(params)))
				b.ReportAllocs()
				for b.Loop() {
					var res decodeResult
					if err := client.Call(context.Background(), "session/prompt", params, &res); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// decodeConns connects a client Conn to an agent Conn serving h, over two
// os.Pipes.
func decodeConns(b *testing.B, h acprpc.Handler) *acprpc.Conn {
	b.Helper()
	agentIn, clientOut, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	clientIn, agentOut, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	agent := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(agentIn, agentOut), h, nil)
	client := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(clientIn, clientOut), nil, nil)
	b.Cleanup(func() {
		client.Close()
		agent.Close()
	})
	return client
}
