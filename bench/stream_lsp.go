package bench

import (
	"context"
	"encoding/json"
	"io"
	"sync/atomic"

	lsp "go.lsp.dev/jsonrpc2"
)

// ServeLSPStream serves the stream workload with go.lsp.dev/jsonrpc2 on r
// and w and returns a channel closed once the connection has ended. A
// prompt releases the read loop with Async and streams with Conn.Notify,
// which returns once its message is written, under a context of its own
// that the session's session/cancel cancels; a Preempter, which the library
// provides for cancel notifications, reads session/cancel ahead of the
// handlers.
func ServeLSPStream(r io.Reader, w io.Writer) <-chan struct{} {
	var (
		conn     lsp.Conn
		turns    streamTurns[context.CancelFunc]
		sessions atomic.Int64
	)
	// The turn's context is the connection's (DetachContext) with a cancel of
	// its own, not CancelHandler's: in v1.0.1 a request's context is pooled,
	// and the goroutine that context.WithCancel starts on it may read it after
	// a handler that returned at once has had it recycled (a data race that
	// -race finds on initialize, and a panic, "cannot create context from nil
	// parent", on an empty turn).
	prompt := func(ctx context.Context, req *lsp.Request) (any, error) {
		var p PromptParams
		if json.Unmarshal(req.Params(), &p) != nil || len(p.Prompt) == 0 {
			return nil, lsp.ErrInvalidParams
		}
		turn, cancel := context.WithCancel(lsp.DetachContext(ctx))
		defer cancel()
		turns.start(p.SessionID, cancel)
		defer turns.end(p.SessionID)
		lsp.Async(ctx)
		stop, err := streamTurn(turn, p.Prompt[0].Text,
			func(text string) error { return conn.Notify(turn, MethodUpdate, chunkParams(p.SessionID, text)) },
			func() error { return conn.Notify(turn, MethodUpdate, toolParams(p.SessionID)) })
		if err != nil {
			return nil, err
		}
		return PromptResult{StopReason: stop}, nil
	}
	handle := func(ctx context.Context, req *lsp.Request) (any, error) {
		switch req.Method() {
		case MethodInitialize:
			return InitializeResult{ProtocolVersion: 1}, nil
		case MethodSessionNew:
			return NewSessionResult{SessionID: newStreamSession(&sessions)}, nil
		case MethodPrompt:
			return prompt(ctx, req)
		}
		return lsp.MethodNotFoundHandler(ctx, req)
	}
	conn = lsp.NewConn(lsp.NewNDJSONStream(rwc{r, w}), lsp.WithPreempter(lspSessionCanceller(func(sessionID string) {
		turns.cancel(sessionID, callCancel)
	})))
	conn.Go(context.Background(), handle)
	return conn.Done()
}

// lspSessionCanceller handles session/cancel on the read loop.
type lspSessionCanceller func(sessionID string)

func (c lspSessionCanceller) Preempt(_ context.Context, req *lsp.Request) (any, error) {
	if req.IsCall() || req.Method() != MethodSessionCancel {
		return nil, lsp.ErrNotHandled
	}
	var p SessionCancelParams
	if json.Unmarshal(req.Params(), &p) == nil {
		c(p.SessionID)
	}
	return true, nil
}
