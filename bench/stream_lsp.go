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
// which returns once its message is written; CancelHandler gives each
// prompt a context to cancel by ID, and a Preempter, which the library
// provides for cancel notifications, reads session/cancel ahead of the
// handlers and cancels the session's prompt that way.
func ServeLSPStream(r io.Reader, w io.Writer) <-chan struct{} {
	var (
		conn     lsp.Conn
		turns    streamTurns[lsp.ID]
		sessions atomic.Int64
	)
	// Only prompts get CancelHandler's context: in v1.0.1 a request's context
	// is pooled, and the goroutine context.WithCancel starts on it may read it
	// after a handler that returned at once has had it recycled (a data race,
	// and at worst a panic, which -race finds on initialize). A prompt runs
	// long past that goroutine's start.
	prompt, cancel := lsp.CancelHandler(func(ctx context.Context, req *lsp.Request) (any, error) {
		var p PromptParams
		if json.Unmarshal(req.Params(), &p) != nil || len(p.Prompt) == 0 {
			return nil, lsp.ErrInvalidParams
		}
		turns.start(p.SessionID, req.ID())
		defer turns.end(p.SessionID)
		lsp.Async(ctx)
		stop, err := streamTurn(ctx, p.Prompt[0].Text,
			func(text string) error { return conn.Notify(ctx, MethodUpdate, chunkParams(p.SessionID, text)) },
			func() error { return conn.Notify(ctx, MethodUpdate, toolParams(p.SessionID)) })
		if err != nil {
			return nil, err
		}
		return PromptResult{StopReason: stop}, nil
	})
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
		turns.cancel(sessionID, cancel)
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
