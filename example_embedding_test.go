package acprpc_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/acpkit/acprpc"
)

type requestLoggerKey struct{}

// Per-request values for an SDK: Options.HandlerContext gives each handler a
// logger that names its request, and the answer's Sent hook sees the same
// context, which is where a span started here would end. SetLogger changes
// the connection's own logger while it runs.
func ExampleOptions_handlerContext() {
	stdout := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a stable output for the example
			}
			return a
		},
	}))
	opts := &acprpc.Options{
		HandlerContext: func(ctx context.Context, req *acprpc.Request) context.Context {
			return context.WithValue(ctx, requestLoggerKey{}, stdout.With("method", req.Method, "id", req.ID.String()))
		},
		Hooks: acprpc.Hooks{Sent: func(ctx context.Context, m *acprpc.Message) {
			if l, ok := ctx.Value(requestLoggerKey{}).(*slog.Logger); ok && m.Kind == acprpc.KindResult {
				l.Info("answered")
			}
		}},
	}
	work := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		ctx.Value(requestLoggerKey{}).(*slog.Logger).Info("working")
		return map[string]string{"stopReason": "end_turn"}, nil
	})
	a, b := acprpc.Pipe()
	ctx := context.Background()
	agent := acprpc.NewConn(ctx, a, work, opts)
	defer agent.Close()
	agent.SetLogger(stdout) // the SDK's logger, known only now
	client := acprpc.NewConn(ctx, b, nil, nil)
	defer client.Close()

	var res struct{ StopReason string }
	err := client.Call(ctx, "session/prompt", map[string]string{"sessionId": "s1"}, &res)
	fmt.Println(res.StopReason, err)
	// Output:
	// level=INFO msg=working method=session/prompt id=1
	// level=INFO msg=answered method=session/prompt id=1
	// end_turn <nil>
}
