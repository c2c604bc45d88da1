package bench

import (
	"context"
	"io"

	"github.com/acpkit/acprpc"
)

// acprpc is the library this module benchmarks. Its defaults are ACP's:
// a cancelled Call sends $/cancel_request, the handler's context ends, and
// the request is answered with the method's marker or -32800.

func init() { register(acprpcPeer{}) }

type acprpcPeer struct{}

func (acprpcPeer) Name() string          { return "acprpc" }
func (acprpcPeer) Cancel() CancelSupport { return CancelBuiltIn }

type acprpcSide struct{ conn *acprpc.Conn }

func (s acprpcSide) Close() error { return s.conn.Close() }

func (acprpcPeer) Serve(r io.Reader, w io.Writer, wl *Workload) Server {
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method != MethodPrompt {
			if req.IsNotification() {
				return nil, nil
			}
			return nil, acprpc.MethodNotFound(req.Method)
		}
		var p PromptParams
		if err := req.DecodeParams(&p); err != nil {
			return nil, err
		}
		if len(p.Prompt) == 0 {
			return nil, acprpc.NewError(acprpc.CodeInvalidParams, "Invalid params")
		}
		conn := acprpc.ConnFromContext(ctx)
		stop, err := wl.Prompt(ctx, p.SessionID, p.Prompt[0].Text, func(u UpdateParams) error {
			return conn.Notify(ctx, MethodUpdate, u)
		})
		if err != nil {
			return nil, err
		}
		return PromptResult{StopReason: stop}, nil
	})
	return acprpcSide{acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(r, w), h, nil)}
}

type acprpcClient struct{ acprpcSide }

func (acprpcPeer) Dial(r io.Reader, w io.Writer, updates *Counter) Client {
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method == MethodUpdate && req.IsNotification() {
			updates.Inc()
			return nil, nil
		}
		if req.IsNotification() {
			return nil, nil
		}
		return nil, acprpc.MethodNotFound(req.Method)
	})
	return acprpcClient{acprpcSide{acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(r, w), h, nil)}}
}

// Prompt's cancel is $/cancel_request alone (CancelRequestOnly), returning
// at once, as the other peers' is; the harness sends session/cancel
// (SessionCanceller), so that every peer's cancel is measured the same way.
func (c acprpcClient) Prompt(ctx context.Context, sessionID, text string) (string, error) {
	var res PromptResult
	if err := c.conn.Call(ctx, MethodPrompt, NewPrompt(sessionID, text), &res, acprpc.CancelRequestOnly()); err != nil {
		return "", err
	}
	return res.StopReason, nil
}

// CancelSession sends session/cancel, as an ACP client does beside the
// $/cancel_request of the prompt it cancels.
func (c acprpcClient) CancelSession(ctx context.Context, sessionID string) error {
	return acprpc.CancelSession(ctx, c.conn, sessionID)
}
