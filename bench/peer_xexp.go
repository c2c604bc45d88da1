package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"

	xj "golang.org/x/exp/jsonrpc2"
)

// golang.org/x/exp/jsonrpc2 is the x/tools jsonrpc2_v2 design: a read
// goroutine, a queue goroutine that offers each message to a Preempter
// first, and one goroutine that hands the rest to the Handler in order, one
// at a time. A handler that must not hold up the next message returns
// ErrAsyncResponse and answers later with Connection.Respond; Connection.Cancel
// ends one request's context by ID. This adapter serves each prompt that way
// on a goroutine of its own, cancels from a Preempter that parses ACP's
// $/cancel_request (so a cancel is seen ahead of the queue), and sends that
// notification when a caller's Await returns with its context's error. The
// library frames with Content-Length headers or a bare JSON stream; ACP's
// newline-delimited framing is the small Framer below.

func init() { register(xexpPeer{}) }

type xexpPeer struct{}

func (xexpPeer) Name() string          { return "xexp" }
func (xexpPeer) Cancel() CancelSupport { return CancelAdapter }

// xexpBinder builds a connection's options once the connection exists, so
// handlers can answer on it.
type xexpBinder func(*xj.Connection) xj.ConnectionOptions

func (b xexpBinder) Bind(_ context.Context, c *xj.Connection) (xj.ConnectionOptions, error) {
	return b(c), nil
}

// xexpDialer hands the connection its already open stream.
type xexpDialer struct{ rwc io.ReadWriteCloser }

func (d xexpDialer) Dial(context.Context) (io.ReadWriteCloser, error) { return d.rwc, nil }

type xexpCanceller struct{ conn *xj.Connection }

func (p xexpCanceller) Preempt(_ context.Context, req *xj.Request) (any, error) {
	if req.IsCall() || req.Method != MethodCancelRequest {
		return nil, xj.ErrNotHandled
	}
	var cp CancelRequestParams
	if json.Unmarshal(req.Params, &cp) == nil {
		p.conn.Cancel(xj.Int64ID(cp.RequestID))
	}
	return nil, nil
}

type xexpServer struct {
	conn     *xj.Connection
	stop     context.CancelFunc
	handlers sync.WaitGroup
}

func (xexpPeer) Serve(r io.Reader, w io.Writer, wl *Workload) Server {
	ctx, stop := context.WithCancel(context.Background())
	s := &xexpServer{stop: stop}
	bind := xexpBinder(func(conn *xj.Connection) xj.ConnectionOptions {
		return xj.ConnectionOptions{
			Framer:    lineFramer{},
			Preempter: xexpCanceller{conn},
			Handler: xj.HandlerFunc(func(ctx context.Context, req *xj.Request) (any, error) {
				return s.handle(ctx, conn, wl, req)
			}),
		}
	})
	conn, err := xj.Dial(ctx, xexpDialer{rwc{r, w}}, bind)
	if err != nil {
		panic(err) // the binder and dialer above cannot fail
	}
	s.conn = conn
	return s
}

// handle runs on the connection's delivery goroutine; a prompt goes on to a
// goroutine of its own and is answered from there.
func (s *xexpServer) handle(ctx context.Context, conn *xj.Connection, wl *Workload, req *xj.Request) (any, error) {
	if !req.IsCall() {
		return nil, nil
	}
	if req.Method != MethodPrompt {
		return nil, xj.ErrMethodNotFound
	}
	var p PromptParams
	if json.Unmarshal(req.Params, &p) != nil || len(p.Prompt) == 0 {
		return nil, xj.ErrInvalidParams
	}
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		stop, err := wl.Prompt(ctx, p.SessionID, p.Prompt[0].Text, func(u UpdateParams) error {
			return conn.Notify(ctx, MethodUpdate, u)
		})
		var res any
		if err == nil {
			res = PromptResult{StopReason: stop}
		}
		_ = conn.Respond(req.ID, res, err)
	}()
	return nil, xj.ErrAsyncResponse
}

// Close ends the handlers' contexts (the library leaves requests in flight
// running when its stream closes), closes the stream and waits for every
// goroutine.
func (s *xexpServer) Close() error {
	s.stop()
	err := xexpClose(s.conn)
	s.handlers.Wait()
	return err
}

// xexpClose closes a connection; the read loop's error on the stream it
// closed is no failure.
func xexpClose(c *xj.Connection) error {
	if err := c.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

type xexpClient struct{ conn *xj.Connection }

func (xexpPeer) Dial(r io.Reader, w io.Writer, updates *Counter) Client {
	opts := xj.ConnectionOptions{
		Framer: lineFramer{},
		Handler: xj.HandlerFunc(func(_ context.Context, req *xj.Request) (any, error) {
			if req.IsCall() {
				return nil, xj.ErrMethodNotFound
			}
			if req.Method == MethodUpdate {
				updates.Inc()
			}
			return nil, nil
		}),
	}
	conn, err := xj.Dial(context.Background(), xexpDialer{rwc{r, w}}, opts)
	if err != nil {
		panic(err) // the options and dialer above cannot fail
	}
	return xexpClient{conn}
}

func (c xexpClient) Prompt(ctx context.Context, sessionID, text string) (string, error) {
	call := c.conn.Call(ctx, MethodPrompt, NewPrompt(sessionID, text))
	var res PromptResult
	if err := call.Await(ctx, &res); err != nil {
		if ctx.Err() != nil {
			if id, ok := call.ID().Raw().(int64); ok {
				_ = c.conn.Notify(context.Background(), MethodCancelRequest, CancelRequestParams{RequestID: id})
			}
		}
		return "", err
	}
	return res.StopReason, nil
}

func (c xexpClient) Close() error { return xexpClose(c.conn) }

// lineFramer frames x/exp/jsonrpc2 messages as newline-delimited JSON, ACP's
// stdio framing, with the library's own EncodeMessage and DecodeMessage.
type lineFramer struct{}

func (lineFramer) Reader(r io.Reader) xj.Reader { return &lineReader{in: bufio.NewReader(r)} }
func (lineFramer) Writer(w io.Writer) xj.Writer { return lineWriter{out: w} }

type lineReader struct{ in *bufio.Reader }

// Read decodes the next line. DecodeMessage copies what it keeps, so a line
// that fits the buffer is decoded in place.
func (r *lineReader) Read(context.Context) (xj.Message, int64, error) {
	line, err := r.in.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = r.in.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, 0, err
	}
	msg, derr := xj.DecodeMessage(line)
	return msg, int64(len(line)), derr
}

type lineWriter struct{ out io.Writer }

// Write writes one message and its newline with a single write.
func (w lineWriter) Write(_ context.Context, msg xj.Message) (int64, error) {
	data, err := xj.EncodeMessage(msg)
	if err != nil {
		return 0, err
	}
	n, err := w.out.Write(append(data, '\n'))
	return int64(n), err
}
