package bench

import (
	"context"
	"encoding/json"
	"io"

	lsp "go.lsp.dev/jsonrpc2"
)

// go.lsp.dev/jsonrpc2 gives each request its own context, a CancelHandler
// that cancels one by ID, and a Preempter that sees messages ahead of the
// handlers. It knows nothing of ACP's $/cancel_request, so this adapter wires
// those pieces to it: the preempter parses the notification, and the caller
// sends it once Call has returned with ctx's error and the ID it used.

func init() { register(lspPeer{}) }

type lspPeer struct{}

func (lspPeer) Name() string          { return "lsp" }
func (lspPeer) Cancel() CancelSupport { return CancelAdapter }

type lspServer struct {
	conn lsp.Conn
}

type lspPreempter struct{ cancel func(lsp.ID) }

func (p lspPreempter) Preempt(ctx context.Context, req *lsp.Request) (any, error) {
	if req.IsCall() || req.Method() != MethodCancelRequest {
		return nil, lsp.ErrNotHandled
	}
	var cp CancelRequestParams
	if json.Unmarshal(req.Params(), &cp) == nil {
		p.cancel(lsp.NewNumberID(cp.RequestID))
	}
	return true, nil
}

func (lspPeer) Serve(r io.Reader, w io.Writer, wl *Workload) Server {
	s := &lspServer{}
	var conn lsp.Conn
	inner := func(ctx context.Context, req *lsp.Request) (any, error) {
		if !req.IsCall() {
			return nil, nil
		}
		if req.Method() != MethodPrompt {
			return nil, lsp.NewError(lsp.MethodNotFound, "Method not found")
		}
		var p PromptParams
		if json.Unmarshal(req.Params(), &p) != nil || len(p.Prompt) == 0 {
			return nil, lsp.NewError(lsp.InvalidParams, "Invalid params")
		}
		stop, err := wl.Prompt(ctx, p.SessionID, p.Prompt[0].Text, func(u UpdateParams) error {
			return conn.Notify(ctx, MethodUpdate, u)
		})
		if err != nil {
			return nil, err
		}
		return PromptResult{StopReason: stop}, nil
	}
	// CancelHandler registers the request on the read goroutine before
	// AsyncHandler lets the next message be read, so a cancel cannot overtake it.
	h, canceller := lsp.CancelHandler(lsp.AsyncHandler(inner))
	conn = lsp.NewConn(lsp.NewNDJSONStream(rwc{r, w}), lsp.WithPreempter(lspPreempter{cancel: canceller}))
	s.conn = conn
	conn.Go(context.Background(), h)
	return s
}

func (s *lspServer) Close() error { return s.conn.Close() }

type lspClient struct {
	conn lsp.Conn
}

func (lspPeer) Dial(r io.Reader, w io.Writer, updates *Counter) Client {
	c := &lspClient{conn: lsp.NewConn(lsp.NewNDJSONStream(rwc{r, w}))}
	c.conn.Go(context.Background(), func(ctx context.Context, req *lsp.Request) (any, error) {
		if !req.IsCall() && req.Method() == MethodUpdate {
			updates.Inc()
			return nil, nil
		}
		if req.IsCall() {
			return nil, lsp.NewError(lsp.MethodNotFound, "Method not found")
		}
		return nil, nil
	})
	return c
}

func (c *lspClient) Prompt(ctx context.Context, sessionID, text string) (string, error) {
	var res PromptResult
	id, err := c.conn.Call(ctx, MethodPrompt, NewPrompt(sessionID, text), &res)
	if err != nil {
		if ctx.Err() != nil {
			if n, ok := id.Number(); ok {
				_ = c.conn.Notify(context.Background(), MethodCancelRequest, CancelRequestParams{RequestID: n})
			}
		}
		return "", err
	}
	return res.StopReason, nil
}

func (c *lspClient) Close() error { return c.conn.Close() }
