package acprpc_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/acpkit/acprpc"
)

// A prompt turn and a cancelled one in ACP v1 and v2, side by side:
// benchstat -col /protocol. In v1 a turn is the prompt's call, whose answer
// carries the stop reason; in v2 the prompt is answered with its messageId
// and the turn ends with an idle state_update, which the client waits for.

// benchTurnConns connects a client to an agent serving h, both speaking
// version v.
func benchTurnConns(b *testing.B, v acprpc.ProtocolVersion, agent, client acprpc.Handler) *acprpc.Conn {
	cR, cW, sR, sW := benchPipes(b)
	opts := &acprpc.Options{PinnedVersion: v}
	server := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(sR, sW), agent, opts)
	c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(cR, cW), client, opts)
	b.Cleanup(func() {
		c.Close()
		server.Close()
	})
	return c
}

var benchChunk = json.RawMessage(`{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"hello"}}}`)

// benchIdleWatcher is a client handler that reports each idle state_update.
func benchIdleWatcher(idle chan<- string) acprpc.HandlerFunc {
	return func(_ context.Context, req *acprpc.Request) (any, error) {
		if req.Method == "session/update" {
			var p struct {
				Update struct{ State, StopReason string }
			}
			if err := req.DecodeParams(&p); err == nil && p.Update.State == "idle" {
				idle <- p.Update.StopReason
			}
		}
		return nil, nil
	}
}

// benchV2Agent inserts each prompt and runs work on a goroutine of its own:
// work(ctx) returns the stop reason.
func benchV2Agent(work func(ctx context.Context, c *acprpc.Conn) string) acprpc.HandlerFunc {
	return func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.IsNotification() {
			return nil, nil // session/cancel: the library has cancelled the work already
		}
		var p benchPromptParams
		if err := req.DecodeParams(&p); err != nil {
			return nil, err
		}
		w, _ := acprpc.WorkFromContext(ctx)
		c := acprpc.ConnFromContext(ctx)
		go func() { _ = w.End(work(w.Context(), c)) }()
		return json.RawMessage(`{"messageId":"m1"}`), nil
	}
}

// BenchmarkTurn is one prompt turn with one agent_message_chunk: in v1 the
// call and its answer; in v2 the call, its messageId answer, and the idle
// state_update.
func BenchmarkTurn(b *testing.B) {
	b.Run("protocol=v1", func(b *testing.B) {
		agent := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			var p benchPromptParams
			if err := req.DecodeParams(&p); err != nil {
				return nil, err
			}
			_ = acprpc.ConnFromContext(ctx).Notify(ctx, "session/update", benchChunk)
			return benchPromptResult{StopReason: "end_turn"}, nil
		})
		client := benchTurnConns(b, acprpc.ProtocolV1, agent, acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) { return nil, nil }))
		benchLoop(b, func() {
			for range b.N {
				var res benchPromptResult
				if err := client.Call(context.Background(), "session/prompt", benchPrompt, &res); err != nil || res.StopReason != "end_turn" {
					b.Fatal(res, err)
				}
			}
		})
	})
	b.Run("protocol=v2", func(b *testing.B) {
		agent := benchV2Agent(func(ctx context.Context, c *acprpc.Conn) string {
			_ = c.Notify(ctx, "session/update", benchChunk)
			return acprpc.StopReasonEndTurn
		})
		idle := make(chan string, 1)
		client := benchTurnConns(b, acprpc.ProtocolV2, agent, benchIdleWatcher(idle))
		benchLoop(b, func() {
			for range b.N {
				var res struct{ MessageID string }
				if err := client.Call(context.Background(), "session/prompt", benchPrompt, &res); err != nil || res.MessageID == "" {
					b.Fatal(res, err)
				}
				if reason := <-idle; reason != "end_turn" {
					b.Fatal(reason)
				}
			}
		})
	})
}

// BenchmarkTurnCancel is a turn cancelled by session/cancel once it runs:
// in v1 the prompt, session/cancel, the handler's context ending and the
// {"stopReason":"cancelled"} answer; in v2 the prompt and its messageId,
// session/cancel, the work's context ending and its idle state_update.
func BenchmarkTurnCancel(b *testing.B) {
	b.Run("protocol=v1", func(b *testing.B) {
		started := make(chan struct{}, 1)
		agent := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			if req.IsNotification() {
				return nil, nil
			}
			started <- struct{}{}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
		client := benchTurnConns(b, acprpc.ProtocolV1, agent, nil)
		benchLoop(b, func() {
			for range b.N {
				done := make(chan error, 1)
				var res benchPromptResult
				go func() { done <- client.Call(context.Background(), "session/prompt", benchPrompt, &res) }()
				<-started
				if err := client.CancelSession(context.Background(), "s1"); err != nil {
					b.Fatal(err)
				}
				if err := <-done; err != nil || res.StopReason != "cancelled" {
					b.Fatal(res, err)
				}
			}
		})
	})
	b.Run("protocol=v2", func(b *testing.B) {
		agent := benchV2Agent(func(ctx context.Context, _ *acprpc.Conn) string {
			<-ctx.Done()
			return acprpc.StopReasonCancelled
		})
		idle := make(chan string, 1)
		client := benchTurnConns(b, acprpc.ProtocolV2, agent, benchIdleWatcher(idle))
		benchLoop(b, func() {
			for range b.N {
				var res struct{ MessageID string }
				if err := client.Call(context.Background(), "session/prompt", benchPrompt, &res); err != nil {
					b.Fatal(err)
				}
				if err := client.CancelSession(context.Background(), "s1"); err != nil {
					b.Fatal(err)
				}
				if reason := <-idle; reason != "cancelled" {
					b.Fatal(reason)
				}
			}
		})
	})
}
