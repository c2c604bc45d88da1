package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"sync"
	"sync/atomic"

	sg "github.com/sourcegraph/jsonrpc2"
)

// sourcegraph/jsonrpc2 v0.2.3 has no per-request context and sends nothing
// when a caller gives up, so this adapter adds ACP's $/cancel_request on both
// sides with the library's public pieces: PickID to know the ID, Notify to
// send the cancel, and an inline handler that registers each request before
// AsyncHandler starts it, so a cancel can never overtake its request.

func init() { register(sourcegraphPeer{}) }

type sourcegraphPeer struct{}

func (sourcegraphPeer) Name() string          { return "sourcegraph" }
func (sourcegraphPeer) Cancel() CancelSupport { return CancelAdapter }

var sgQuiet = sg.SetLogger(log.New(io.Discard, "", 0))

type sgServer struct {
	conn *sg.Conn
	wl   *Workload

	mu       sync.Mutex
	inflight map[sg.ID]context.CancelFunc
	async    sg.Handler
}

func (sourcegraphPeer) Serve(r io.Reader, w io.Writer, wl *Workload) Server {
	s := &sgServer{wl: wl, inflight: map[sg.ID]context.CancelFunc{}}
	s.async = sg.AsyncHandler(sg.HandlerWithError(s.handle))
	s.conn = sg.NewConn(context.Background(), sg.NewPlainObjectStream(rwc{r, w}), s, sgQuiet)
	return s
}

// Handle runs on the read goroutine.
func (s *sgServer) Handle(ctx context.Context, conn *sg.Conn, req *sg.Request) {
	if req.Notif {
		if req.Method == MethodCancelRequest && req.Params != nil {
			var p CancelRequestParams
			if json.Unmarshal(*req.Params, &p) == nil {
				s.mu.Lock()
				cancel := s.inflight[sg.ID{Num: uint64(p.RequestID)}]
				s.mu.Unlock()
				if cancel != nil {
					cancel()
				}
			}
		}
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.inflight[req.ID] = cancel
	s.mu.Unlock()
	s.async.Handle(rctx, conn, req)
}

func (s *sgServer) handle(ctx context.Context, conn *sg.Conn, req *sg.Request) (any, error) {
	defer func() {
		s.mu.Lock()
		cancel := s.inflight[req.ID]
		delete(s.inflight, req.ID)
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}()
	if req.Method != MethodPrompt {
		return nil, &sg.Error{Code: sg.CodeMethodNotFound, Message: "Method not found"}
	}
	var p PromptParams
	if req.Params == nil || json.Unmarshal(*req.Params, &p) != nil || len(p.Prompt) == 0 {
		return nil, &sg.Error{Code: sg.CodeInvalidParams, Message: "Invalid params"}
	}
	stop, err := s.wl.Prompt(ctx, p.SessionID, p.Prompt[0].Text, func(u UpdateParams) error {
		return conn.Notify(ctx, MethodUpdate, u)
	})
	if err != nil {
		return nil, err
	}
	return PromptResult{StopReason: stop}, nil
}

// Close closes the connection; one that already closed because its input
// ended is not an error.
func (s *sgServer) Close() error { return sgClose(s.conn) }

func sgClose(c *sg.Conn) error {
	if err := c.Close(); err != nil && !errors.Is(err, sg.ErrClosed) {
		return err
	}
	return nil
}

type sgClient struct {
	conn    *sg.Conn
	updates *Counter
	nextID  atomic.Uint64
}

func (sourcegraphPeer) Dial(r io.Reader, w io.Writer, updates *Counter) Client {
	c := &sgClient{updates: updates}
	c.conn = sg.NewConn(context.Background(), sg.NewPlainObjectStream(rwc{r, w}), sg.HandlerWithError(c.handle), sgQuiet)
	return c
}

func (c *sgClient) handle(ctx context.Context, conn *sg.Conn, req *sg.Request) (any, error) {
	if req.Method == MethodUpdate && req.Notif {
		c.updates.Inc()
		return nil, nil
	}
	return nil, &sg.Error{Code: sg.CodeMethodNotFound, Message: "Method not found"}
}

func (c *sgClient) Prompt(ctx context.Context, sessionID, text string) (string, error) {
	id := c.nextID.Add(1) // IDs start at 1: the library treats 0 as unset
	wt, err := c.conn.DispatchCall(ctx, MethodPrompt, NewPrompt(sessionID, text), sg.PickID(sg.ID{Num: id}))
	if err != nil {
		return "", err
	}
	var res PromptResult
	if err := wt.Wait(ctx, &res); err != nil {
		if ctx.Err() != nil {
			// The library sends nothing on its own; tell the agent.
			_ = c.conn.Notify(context.Background(), MethodCancelRequest, CancelRequestParams{RequestID: int64(id)})
		}
		return "", err
	}
	return res.StopReason, nil
}

func (c *sgClient) Close() error { return sgClose(c.conn) }
