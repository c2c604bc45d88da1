package remote

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpkit/acprpc"
)

// The benchmarks run a client Conn and an agent Conn in one process, over
// loopback TCP for WebSocket and Streamable HTTP, and over acprpc.Pipe (no
// framing, no kernel) as the floor. See docs/transports.md for figures.

type benchPromptResult struct {
	StopReason string `json:"stopReason"`
}

var benchPrompt = map[string]any{"sessionId": "s1", "prompt": []map[string]string{{"type": "text", "text": "hello"}}}

// benchPair connects a client Conn to an agent Conn serving h, over kind
// ("websocket", "http" or "pipe"), initialized and ready.
func benchPair(b *testing.B, kind string, h acprpc.HandlerFunc) *acprpc.Conn {
	b.Helper()
	mux := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method == "initialize" {
			return map[string]int{"protocolVersion": 1}, nil
		}
		return h(ctx, req)
	})
	var clientSide acprpc.Transport
	var agent *acprpc.Conn
	if kind == "pipe" {
		var agentSide acprpc.Transport
		clientSide, agentSide = acprpc.Pipe()
		agent = acprpc.NewConn(context.Background(), agentSide, mux, nil)
	} else {
		agents := make(chan *acprpc.Conn, 1)
		srv := NewServer(func(t acprpc.Transport, r *http.Request) {
			agents <- acprpc.NewConn(context.Background(), t, mux, nil)
		}, nil)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go func() { _ = srv.Serve(l) }()
		b.Cleanup(func() { _ = srv.Close() })
		scheme := map[string]string{"websocket": "ws", "http": "http"}[kind]
		if clientSide, err = Dial(context.Background(), scheme+"://"+l.Addr().String()+DefaultPath, nil); err != nil {
			b.Fatal(err)
		}
		defer func() { agent = <-agents }()
	}
	client := acprpc.NewConn(context.Background(), clientSide, nil, nil)
	if err := client.Call(context.Background(), "initialize", map[string]int{"protocolVersion": 1}, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = client.Close()
		_ = agent.Close()
	})
	return client
}

var benchKinds = []string{"websocket", "http", "pipe"}

// BenchmarkRoundTrip is one session/prompt call and its answer.
func BenchmarkRoundTrip(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run("transport="+kind, func(b *testing.B) {
			client := benchPair(b, kind, func(ctx context.Context, req *acprpc.Request) (any, error) {
				return benchPromptResult{StopReason: "end_turn"}, nil
			})
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				var res benchPromptResult
				if err := client.Call(context.Background(), "session/prompt", benchPrompt, &res); err != nil || res.StopReason != "end_turn" {
					b.Fatalf("got %+v, %v", res, err)
				}
			}
		})
	}
}

// BenchmarkStream is a turn that streams 1,000 session/update chunks of 32
// bytes to the client, then answers: the agent's writes back to back, the
// cost per update (b.N counts updates).
func BenchmarkStream(b *testing.B) {
	const perTurn = 1000
	chunk := map[string]any{"sessionId": "s1", "update": map[string]any{
		"sessionUpdate": "agent_message_chunk", "content": map[string]string{"type": "text", "text": strings.Repeat("x", 32)}}}
	for _, kind := range benchKinds {
		b.Run("transport="+kind, func(b *testing.B) {
			client := benchPair(b, kind, func(ctx context.Context, req *acprpc.Request) (any, error) {
				conn := acprpc.ConnFromContext(ctx)
				for range perTurn {
					if err := conn.Notify(ctx, "session/update", chunk); err != nil {
						return nil, err
					}
				}
				return benchPromptResult{StopReason: "end_turn"}, nil
			})
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += perTurn {
				var res benchPromptResult
				if err := client.Call(context.Background(), "session/prompt", benchPrompt, &res); err != nil || res.StopReason != "end_turn" {
					b.Fatalf("got %+v, %v", res, err)
				}
			}
		})
	}
}

// BenchmarkWebSocketSizes is BenchmarkRoundTrip over WebSocket with a
// message of each size both ways: a prompt whose text has that many bytes,
// answered with as many. It is the throughput behind the server's reads
// and writes: many small frames, frames around the buffers' sizes, and
// frames far larger.
func BenchmarkWebSocketSizes(b *testing.B) {
	for _, size := range []int{128, 2 << 10, 16 << 10, 256 << 10} {
		b.Run("size="+strconv.Itoa(size), func(b *testing.B) {
			pad := strings.Repeat("a", size)
			client := benchPair(b, "websocket", func(ctx context.Context, req *acprpc.Request) (any, error) {
				return map[string]string{"stopReason": "end_turn", "pad": pad}, nil
			})
			params := map[string]any{"sessionId": "s1", "prompt": []map[string]string{{"type": "text", "text": pad}}}
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				var res benchPromptResult
				if err := client.Call(context.Background(), "session/prompt", params, &res); err != nil || res.StopReason != "end_turn" {
					b.Fatalf("got %+v, %v", res, err)
				}
			}
		})
	}
}

// BenchmarkCancelLatency is a call cancelled while its handler runs: the
// request, $/cancel_request, the handler's context ending and the -32800
// answer the caller waits for. The handler cancels the caller's context as
// it starts; "cancel-ns/op" is the time from that cancel to the handler's
// context ending on the far side, the latency of cancellation itself.
func BenchmarkCancelLatency(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run("transport="+kind, func(b *testing.B) {
			cancels := make(chan context.CancelFunc, 1)
			var total time.Duration
			client := benchPair(b, kind, func(ctx context.Context, req *acprpc.Request) (any, error) {
				start := time.Now()
				(<-cancels)()
				<-ctx.Done()
				total += time.Since(start) // one handler at a time
				return nil, context.Cause(ctx)
			})
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ctx, cancel := context.WithCancel(context.Background())
				cancels <- cancel
				err := client.Call(ctx, "terminal/wait_for_exit", map[string]string{"sessionId": "s1"}, nil, acprpc.WaitAfterCancel(10*time.Second))
				var rpcErr *acprpc.Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != acprpc.CodeRequestCancelled {
					b.Fatalf("want the -32800 answer, got %v", err)
				}
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "cancel-ns/op")
		})
	}
}
