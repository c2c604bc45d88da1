package acprpc

import (
	"context"
	"strconv"
)

// Method names of the cancellation protocol.
const (
	MethodCancelRequest    = "$/cancel_request"
	MethodLSPCancelRequest = "$/cancelRequest"
)

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
	r := c.incoming.get(keyOf(raw))
	if r == nil {
		c.log.Debug("acprpc: ignoring cancel for a request not in flight", "id", string(raw))
		return
	}
	r.cancelWith(ErrPeerCancelled)
}

// sendCancel tells the peer that our request id is no longer wanted. It
// never waits for the peer, so the caller returns even if the peer has
// stopped reading.
func (c *Conn) sendCancel(ctx context.Context, id int64) {
	f := getFrame()
	f.info = frameInfo{kind: KindNotification, method: MethodCancelRequest, generated: true, ctx: ctx}
	f.begin(nil)
	f.buf.WriteString(`,"method":"$/cancel_request","params":{"requestId":`)
	f.buf.Write(strconv.AppendInt(f.buf.AvailableBuffer(), id, 10))
	f.buf.WriteString("}}")
	if c.writer.sendNow(f) == nil {
		c.stats.cancelsSent.Add(1)
	}
}
