package bench

import (
	"context"
	"encoding/json"
	"io"
	"sync/atomic"

	xj "golang.org/x/exp/jsonrpc2"
)

// ServeXexpStream serves the stream workload with golang.org/x/exp/jsonrpc2
// on r and w and returns a channel closed once the connection has ended.
// The library hands requests to its Handler one at a time, so a prompt
// returns ErrAsyncResponse and streams on a goroutine of its own with
// Connection.Notify, which returns once its message is written, then
// answers with Connection.Respond; a Preempter, which the library provides
// for cancel notifications, reads session/cancel ahead of the queue and ends
// the session's prompt with Connection.Cancel, which cancels that request's
// context. The framing is the round-trip peer's newline-delimited lineFramer.
func ServeXexpStream(r io.Reader, w io.Writer) <-chan struct{} {
	var (
		turns    streamTurns[xj.ID]
		sessions atomic.Int64
	)
	bind := xexpBinder(func(conn *xj.Connection) xj.ConnectionOptions {
		return xj.ConnectionOptions{
			Framer: lineFramer{},
			Preempter: xexpSessionCanceller(func(sessionID string) {
				turns.cancel(sessionID, conn.Cancel)
			}),
			Handler: xj.HandlerFunc(func(ctx context.Context, req *xj.Request) (any, error) {
				switch req.Method {
				case MethodInitialize:
					return InitializeResult{ProtocolVersion: 1}, nil
				case MethodSessionNew:
					return NewSessionResult{SessionID: newStreamSession(&sessions)}, nil
				case MethodPrompt:
					var p PromptParams
					if json.Unmarshal(req.Params, &p) != nil || len(p.Prompt) == 0 {
						return nil, xj.ErrInvalidParams
					}
					turns.start(p.SessionID, req.ID)
					go func() {
						defer turns.end(p.SessionID)
						stop, err := streamTurn(ctx, p.Prompt[0].Text,
							func(text string) error { return conn.Notify(ctx, MethodUpdate, chunkParams(p.SessionID, text)) },
							func() error { return conn.Notify(ctx, MethodUpdate, toolParams(p.SessionID)) })
						var res any
						if err == nil {
							res = PromptResult{StopReason: stop}
						}
						_ = conn.Respond(req.ID, res, err)
					}()
					return nil, xj.ErrAsyncResponse
				}
				if !req.IsCall() {
					return nil, nil
				}
				return nil, xj.ErrNotHandled
			}),
		}
	})
	conn, err := xj.Dial(context.Background(), xexpDialer{rwc{r, w}}, bind)
	if err != nil {
		panic(err) // the binder and dialer above cannot fail
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = conn.Wait()
	}()
	return done
}

// xexpSessionCanceller handles session/cancel ahead of the handler's queue.
type xexpSessionCanceller func(sessionID string)

func (c xexpSessionCanceller) Preempt(_ context.Context, req *xj.Request) (any, error) {
	if req.IsCall() || req.Method != MethodSessionCancel {
		return nil, xj.ErrNotHandled
	}
	var p SessionCancelParams
	if json.Unmarshal(req.Params, &p) == nil {
		c(p.SessionID)
	}
	return nil, nil
}
