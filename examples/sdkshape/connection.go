package sdkshape

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc"
)

// MethodHandler serves the peer's requests and notifications, raw: the
// method, its params as received, and an answer or the SDK's error. ctx
// ends when the request is cancelled, by the peer's $/cancel_request or
// its session/cancel; LoggerFromContext gives the request's logger.
type MethodHandler func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError)

// Options configure a Connection; the zero value (or nil) is ready.
type Options struct {
	// Logger receives the connection's diagnostics; nil is silent.
	// SetLogger changes it later.
	Logger *slog.Logger

	// ReportCancelledTurns makes Prompt return stopReason "cancelled" for a
	// turn it cancelled, also from an agent that answers "end_turn".
	ReportCancelledTurns bool

	// CancelWait bounds how long Prompt waits, after its context ends and
	// session/cancel is sent, for the agent's answer; then it returns
	// "cancelled". Zero means DefaultCancelWait.
	CancelWait time.Duration
}

// DefaultCancelWait is how long Prompt waits for a cancelled turn's answer.
const DefaultCancelWait = 5 * time.Second

// Connection is one side of an ACP v1 connection, agent or client.
type Connection struct {
	conn       *acprpc.Conn
	logger     atomic.Pointer[slog.Logger]
	cancelWait time.Duration
}

// NewConnection serves handler over a byte stream: peerInput is where the
// peer reads (its stdin), peerOutput where it writes (its stdout). The
// connection speaks ACP v1 alone, whatever the peer's initialize says.
func NewConnection(handler MethodHandler, peerInput io.Writer, peerOutput io.Reader, opts *Options) *Connection {
	return NewConnectionOver(handler, acprpc.NewStreamPipes(peerOutput, peerInput), opts)
}

// NewConnectionOver is NewConnection over any acprpc transport: a
// WebSocket or Streamable HTTP connection from acprpc's remote package, or
// an in-process acprpc.Pipe.
func NewConnectionOver(handler MethodHandler, t acprpc.Transport, opts *Options) *Connection {
	if opts == nil {
		opts = &Options{}
	}
	c := &Connection{cancelWait: opts.CancelWait}
	if c.cancelWait <= 0 {
		c.cancelWait = DefaultCancelWait
	}
	c.setLogger(opts.Logger)
	c.conn = acprpc.NewConn(context.Background(), t, handle(handler), &acprpc.Options{
		Logger:               c.logger.Load(),
		PinnedVersion:        acprpc.ProtocolV1,
		ReportCancelledTurns: opts.ReportCancelledTurns,
		HandlerContext:       c.requestContext,
	})
	return c
}

// handle adapts a MethodHandler to acprpc. A nil *RequestError must not
// become a non-nil error: it is checked before the conversion.
func handle(h MethodHandler) acprpc.Handler {
	return acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if h == nil {
			return nil, NewMethodNotFound(req.Method)
		}
		result, rerr := h(ctx, req.Method, req.Params)
		if rerr != nil {
			return nil, rerr
		}
		return result, nil
	})
}

type loggerKey struct{}

// requestContext gives each handler a logger that names its request, from
// the logger in force as the request is read.
func (c *Connection) requestContext(ctx context.Context, req *acprpc.Request) context.Context {
	l := c.logger.Load().With("method", req.Method)
	if !req.IsNotification() {
		l = l.With("id", req.ID.String())
	}
	return context.WithValue(ctx, loggerKey{}, l)
}

// LoggerFromContext returns the logger of a handler's request; outside a
// handler, a silent one.
func LoggerFromContext(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// SetLogger changes the connection's logger while it runs; nil is silent.
func (c *Connection) SetLogger(l *slog.Logger) {
	c.setLogger(l)
	c.conn.SetLogger(c.logger.Load())
}

func (c *Connection) setLogger(l *slog.Logger) {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	c.logger.Store(l)
}

// SendRequest calls the peer and decodes its answer into T. When ctx ends
// first, the peer is sent $/cancel_request and the error is -32800.
func SendRequest[T any](ctx context.Context, c *Connection, method string, params any) (T, error) {
	result, err := acprpc.CallFor[T](ctx, c.conn, method, params)
	return result, fromCall(err)
}

// SendNotification sends the peer a notification.
func (c *Connection) SendNotification(ctx context.Context, method string, params any) error {
	return fromCall(c.conn.Notify(ctx, method, params))
}

// Done is closed when the connection has ended.
func (c *Connection) Done() <-chan struct{} { return c.conn.Done() }

// Close ends the connection.
func (c *Connection) Close() error { return c.conn.Close() }
