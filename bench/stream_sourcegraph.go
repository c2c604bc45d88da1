package bench

import (
	"context"
	"encoding/json"
	"io"
	"sync/atomic"

	sg "github.com/sourcegraph/jsonrpc2"
)

// ServeSourcegraphStream serves the stream workload with
// sourcegraph/jsonrpc2 on r and w and returns a channel closed once the
// connection has ended. The library calls Handle on its read goroutine
// with the connection's context, not a request's: a prompt gets a context
// of its own, remembered for its session, and streams on a goroutine of its
// own with Conn.Notify, which returns once its message is written, then
// answers with Conn.Reply; session/cancel, read on the read goroutine,
// cancels that context.
func ServeSourcegraphStream(r io.Reader, w io.Writer) <-chan struct{} {
	a := &sgStreamAgent{}
	conn := sg.NewConn(context.Background(), sg.NewPlainObjectStream(rwc{r, w}), a, sgQuiet)
	return conn.DisconnectNotify()
}

type sgStreamAgent struct {
	turns    streamTurns[context.CancelFunc]
	sessions atomic.Int64
}

func (a *sgStreamAgent) Handle(ctx context.Context, conn *sg.Conn, req *sg.Request) {
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	switch req.Method {
	case MethodSessionCancel:
		var p SessionCancelParams
		if json.Unmarshal(params, &p) == nil {
			a.turns.cancel(p.SessionID, callCancel)
		}
	case MethodInitialize:
		_ = conn.Reply(ctx, req.ID, InitializeResult{ProtocolVersion: 1})
	case MethodSessionNew:
		_ = conn.Reply(ctx, req.ID, NewSessionResult{SessionID: newStreamSession(&a.sessions)})
	case MethodPrompt:
		var p PromptParams
		if json.Unmarshal(params, &p) != nil || len(p.Prompt) == 0 {
			_ = conn.ReplyWithError(ctx, req.ID, &sg.Error{Code: sg.CodeInvalidParams, Message: "Invalid params"})
			return
		}
		turn, cancel := context.WithCancel(ctx)
		a.turns.start(p.SessionID, cancel)
		go func() {
			defer cancel()
			defer a.turns.end(p.SessionID)
			stop, err := streamTurn(turn, p.Prompt[0].Text,
				func(text string) error { return conn.Notify(turn, MethodUpdate, chunkParams(p.SessionID, text)) },
				func() error { return conn.Notify(turn, MethodUpdate, toolParams(p.SessionID)) })
			if err != nil {
				_ = conn.ReplyWithError(ctx, req.ID, &sg.Error{Code: sg.CodeInternalError, Message: err.Error()})
				return
			}
			_ = conn.Reply(ctx, req.ID, PromptResult{StopReason: stop})
		}()
	default:
		if !req.Notif {
			_ = conn.ReplyWithError(ctx, req.ID, &sg.Error{Code: sg.CodeMethodNotFound, Message: "Method not found"})
		}
	}
}
