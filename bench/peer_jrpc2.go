package bench

import (
	"context"
	"io"
	"math"
	"strconv"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/channel"
	"github.com/creachadair/jrpc2/handler"
)

// creachadair/jrpc2 splits a connection into a Server (the agent side) and a
// Client. Each request gets its own context, which Server.CancelRequest ends,
// and a cancelled call runs the client's OnCancel hook after returning; the
// protocol of cancellation is left to the user, so this adapter sends ACP's
// $/cancel_request from OnCancel and serves it with a handler that calls
// CancelRequest. Framing is the library's channel.Line (NDJSON). A server
// sending notifications is a non-standard extension to jrpc2 and needs
// AllowPush. Concurrency bounds how many handlers run at once (by default the
// number of CPUs); it is lifted so that blocked prompts do not hold up the
// others, as no other peer here bounds them.

func init() { register(jrpc2Peer{}) }

type jrpc2Peer struct{}

func (jrpc2Peer) Name() string          { return "jrpc2" }
func (jrpc2Peer) Cancel() CancelSupport { return CancelAdapter }

type jrpc2Server struct{ srv *jrpc2.Server }

func (jrpc2Peer) Serve(r io.Reader, w io.Writer, wl *Workload) Server {
	mux := handler.Map{
		MethodPrompt: func(ctx context.Context, req *jrpc2.Request) (any, error) {
			var p PromptParams
			if err := req.UnmarshalParams(&p); err != nil {
				return nil, err
			}
			if len(p.Prompt) == 0 {
				return nil, jrpc2.Errorf(jrpc2.InvalidParams, "Invalid params")
			}
			srv := jrpc2.ServerFromContext(ctx)
			stop, err := wl.Prompt(ctx, p.SessionID, p.Prompt[0].Text, func(u UpdateParams) error {
				return srv.Notify(ctx, MethodUpdate, u)
			})
			if err != nil {
				return nil, err
			}
			return PromptResult{StopReason: stop}, nil
		},
		MethodCancelRequest: func(ctx context.Context, req *jrpc2.Request) (any, error) {
			var p CancelRequestParams
			if err := req.UnmarshalParams(&p); err != nil {
				return nil, err
			}
			// jrpc2 keys requests by the ID's JSON text; the client's are integers.
			jrpc2.ServerFromContext(ctx).CancelRequest(strconv.FormatInt(p.RequestID, 10))
			return nil, nil
		},
	}
	srv := jrpc2.NewServer(mux, &jrpc2.ServerOptions{AllowPush: true, Concurrency: math.MaxInt32})
	return jrpc2Server{srv.Start(channel.Line(r, rwc{r, w}))}
}

// Close stops the server, cancelling the handlers in flight, and waits for
// its goroutines; a server that stopped because its input ended is no error.
func (s jrpc2Server) Close() error {
	s.srv.Stop()
	return s.srv.Wait()
}

type jrpc2Client struct{ cli *jrpc2.Client }

func (jrpc2Peer) Dial(r io.Reader, w io.Writer, updates *Counter) Client {
	cli := jrpc2.NewClient(channel.Line(r, rwc{r, w}), &jrpc2.ClientOptions{
		OnNotify: func(req *jrpc2.Request) {
			if req.Method() == MethodUpdate {
				updates.Inc()
			}
		},
		OnCancel: func(cli *jrpc2.Client, rsp *jrpc2.Response) {
			if id, err := strconv.ParseInt(rsp.ID(), 10, 64); err == nil {
				_ = cli.Notify(context.Background(), MethodCancelRequest, CancelRequestParams{RequestID: id})
			}
		},
	})
	return jrpc2Client{cli}
}

func (c jrpc2Client) Prompt(ctx context.Context, sessionID, text string) (string, error) {
	var res PromptResult
	if err := c.cli.CallResult(ctx, MethodPrompt, NewPrompt(sessionID, text), &res); err != nil {
		return "", err
	}
	return res.StopReason, nil
}

func (c jrpc2Client) Close() error { return c.cli.Close() }
