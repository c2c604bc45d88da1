package bench

import (
	"context"
	"io"
	"math"
	"sync/atomic"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/channel"
	"github.com/creachadair/jrpc2/handler"
)

// ServeJrpc2Stream serves the stream workload with creachadair/jrpc2 on r
// and w and returns a channel closed once the connection has ended. A
// prompt streams with Server.Notify (AllowPush), which returns once its
// message is written; session/cancel is a notification handler that ends
// the session's prompt with Server.CancelRequest, which cancels that
// handler's context. Concurrency is lifted, as in the round-trip peer, so
// that the handlers of many sessions' prompts run at once.
func ServeJrpc2Stream(r io.Reader, w io.Writer) <-chan struct{} {
	var (
		turns    streamTurns[string]
		sessions atomic.Int64
	)
	mux := handler.Map{
		MethodInitialize: func(context.Context, *jrpc2.Request) (any, error) {
			return InitializeResult{ProtocolVersion: 1}, nil
		},
		MethodSessionNew: func(context.Context, *jrpc2.Request) (any, error) {
			return NewSessionResult{SessionID: newStreamSession(&sessions)}, nil
		},
		MethodPrompt: func(ctx context.Context, req *jrpc2.Request) (any, error) {
			var p PromptParams
			if err := req.UnmarshalParams(&p); err != nil {
				return nil, err
			}
			if len(p.Prompt) == 0 {
				return nil, jrpc2.Errorf(jrpc2.InvalidParams, "Invalid params")
			}
			turns.start(p.SessionID, req.ID())
			defer turns.end(p.SessionID)
			srv := jrpc2.ServerFromContext(ctx)
			stop, err := streamTurn(ctx, p.Prompt[0].Text,
				func(text string) error { return srv.Notify(ctx, MethodUpdate, chunkParams(p.SessionID, text)) },
				func() error { return srv.Notify(ctx, MethodUpdate, toolParams(p.SessionID)) })
			if err != nil {
				return nil, err
			}
			return PromptResult{StopReason: stop}, nil
		},
		MethodSessionCancel: func(ctx context.Context, req *jrpc2.Request) (any, error) {
			var p SessionCancelParams
			if err := req.UnmarshalParams(&p); err != nil {
				return nil, err
			}
			turns.cancel(p.SessionID, jrpc2.ServerFromContext(ctx).CancelRequest)
			return nil, nil
		},
	}
	srv := jrpc2.NewServer(mux, &jrpc2.ServerOptions{AllowPush: true, Concurrency: math.MaxInt32})
	srv.Start(channel.Line(r, rwc{r, w}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Wait()
	}()
	return done
}
