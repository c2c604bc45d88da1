package acprpc

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Cancellation causes. A handler learns why its context ended with
// context.Cause(ctx) and errors.Is.
var (
	// ErrPeerCancelled: the peer sent $/cancel_request for the request.
	ErrPeerCancelled = errors.New("acprpc: cancelled by the peer")
	// ErrSessionCancelled: the request's session was cancelled, by the
	// peer's session/cancel or session/close, or by CancelSession here.
	ErrSessionCancelled = errors.New("acprpc: session cancelled")
	// ErrDeadline: Options.HandlerTimeout passed. It matches
	// context.DeadlineExceeded too.
	ErrDeadline error = deadlineError{}
	// ErrConnClosed: the connection closed, by Close, by the peer's end of
	// input, by a write failure, or by NewConn's context ending.
	ErrConnClosed = errors.New("acprpc: connection closed")
)

type deadlineError struct{}

func (deadlineError) Error() string { return "acprpc: handler deadline exceeded" }
func (deadlineError) Unwrap() error { return context.DeadlineExceeded }

// Method names of the cancellation protocol.
const (
	MethodCancelRequest    = "$/cancel_request"
	MethodLSPCancelRequest = "$/cancelRequest"
)

// errRequestDone ends a request's context once it is answered, like
// net/http ends a request's context when ServeHTTP returns.
var errRequestDone = errors.New("acprpc: request answered")

// cancelWith cancels the request for cause. The first cause is kept, and
// from then on the request is owed its cancelled answer: by the handler's
// return, or by the grace timer if the handler does not return in time.
func (r *inRequest) cancelWith(cause error) {
	r.mu.Lock()
	if r.cause != nil || r.answered.Load() {
		r.mu.Unlock()
		return
	}
	r.cause = cause
	if grace := r.conn.opts.CancelGrace; grace > 0 && r.conn.Err() == nil {
		r.grace = time.AfterFunc(grace, func() { r.conn.answerCancelled(r) })
	}
	r.mu.Unlock()
	r.cancel(cause)
}

// peerCancel handles $/cancel_request (and, when allowed, $/cancelRequest).
// It runs on the read goroutine, ahead of every queue. It is never answered:
// an unknown or finished ID and malformed params are only logged.
func (c *Conn) peerCancel(m *message) {
	field := "requestId"
	if m.method == MethodLSPCancelRequest {
		field = "id"
	}
	raw := member(m.params, field)
	if !validID(raw) {
		c.log.Warn("acprpc: ignoring cancel with malformed params", "method", m.method, "params", string(m.params))
		return
	}
	c.stats.cancelsReceived.Add(1)
	r := c.in.get(keyOf(raw))
	if r == nil {
		c.log.Debug("acprpc: ignoring cancel for a request not in flight", "id", string(raw))
		return
	}
	r.cancelWith(ErrPeerCancelled)
}

// sendCancel tells the peer that our request id is no longer wanted. It only
// queues the line, so the caller returns even if the peer has stopped
// reading.
func (c *Conn) sendCancel(id int64) {
	f := getFrame()
	f.begin(nil)
	f.buf.WriteString(`,"method":"$/cancel_request","params":{"requestId":`)
	f.buf.Write(strconv.AppendInt(f.buf.AvailableBuffer(), id, 10))
	f.buf.WriteString("}}\n")
	if c.stream.out.send(f) == nil {
		c.stats.cancelsSent.Add(1)
	}
}

// answerCancelled answers a cancelled request whose handler has not
// returned within its grace period.
func (c *Conn) answerCancelled(r *inRequest) {
	c.answer(r, c.cancelledFrame(r))
}

// cancelledFrame is the answer of a cancelled request: its method's marker,
// or -32800.
func (c *Conn) cancelledFrame(r *inRequest) *frame {
	if marker, ok := c.opts.CancelMarkers[r.req.Method]; ok {
		if f, err := resultFrame(r.rawID, marker); err == nil {
			return f
		}
	}
	return errorFrame(r.rawID, errCancelledAnswer)
}

// WaitAfterCancel sets, for one Call, how long to wait for the peer's answer
// after the call's context ends; see Options.WaitAfterCancel.
func WaitAfterCancel(d time.Duration) CallOption {
	return func(o *callOptions) { o.waitAfterCancel = d }
}

// CallOption adjusts one Call.
type CallOption func(*callOptions)

type callOptions struct {
	waitAfterCancel time.Duration
}
