package acprpc_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"

	"github.com/acpkit/acprpc"
)

// A wire trace: every message either way, logged through slog. At
// slog.LevelDebug the trace also carries each message's bytes.
func ExampleLogHooks() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a stable output for the example
			}
			return a
		},
	}))
	a, b := acprpc.Pipe()
	ctx := context.Background()
	echo := acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) { return req.Params, nil })
	agent := acprpc.NewConn(ctx, a, echo, nil)
	defer agent.Close()
	client := acprpc.NewConn(ctx, b, nil, &acprpc.Options{Hooks: acprpc.LogHooks(logger, slog.LevelInfo)})
	defer client.Close()

	_ = client.Call(ctx, "initialize", map[string]int{"protocolVersion": 1}, nil)
	_ = client.Call(ctx, "session/new", map[string]string{"cwd": "/home/me"}, nil)
	// Output:
	// level=INFO msg="acprpc: sent" dir=sent kind=request size=77 id=1 method=initialize
	// level=INFO msg="acprpc: received" dir=received kind=result size=55 id=1 method=initialize
	// level=INFO msg="acprpc: sent" dir=sent kind=request size=75 id=2 method=session/new
	// level=INFO msg="acprpc: received" dir=received kind=result size=52 id=2 method=session/new
}

// Metrics: answers counted by method and outcome, the library's own
// (markers, -32800 after the grace period, bad-input answers) told apart.
func ExampleHooks_metrics() {
	var mu sync.Mutex
	answers := map[string]int{}
	hooks := acprpc.Hooks{Sent: func(_ context.Context, m *acprpc.Message) {
		if m.Kind != acprpc.KindResult && m.Kind != acprpc.KindError {
			return
		}
		outcome := m.Kind.String()
		if m.Error != nil {
			outcome = fmt.Sprint(m.Error.Code)
		}
		if m.Generated {
			outcome += " (library)"
		}
		mu.Lock()
		answers[m.Method+" "+outcome]++
		mu.Unlock()
	}}

	a, b := acprpc.Pipe()
	ctx := context.Background()
	handler := acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
		switch req.Method {
		case "initialize":
			return map[string]int{"protocolVersion": 1}, nil
		case "session/new":
			return map[string]string{"sessionId": "s1"}, nil
		}
		return nil, acprpc.MethodNotFound(req.Method)
	})
	agent := acprpc.NewConn(ctx, a, handler, &acprpc.Options{Hooks: hooks})
	client := acprpc.NewConn(ctx, b, nil, nil)
	_ = client.Call(ctx, "initialize", map[string]int{"protocolVersion": 1}, nil)
	_ = client.Call(ctx, "session/new", map[string]string{}, nil)
	_ = client.Call(ctx, "session/new", map[string]string{}, nil)
	_ = client.Call(ctx, "session/load", map[string]string{}, nil)
	_ = client.Call(ctx, "$/ping", nil, nil)
	client.Close()
	agent.Close()

	mu.Lock()
	defer mu.Unlock()
	var keys []string
	for k := range answers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Println(k, answers[k])
	}
	// Output:
	// $/ping -32601 (library) 1
	// initialize result 1
	// session/load -32601 1
	// session/new result 2
}
