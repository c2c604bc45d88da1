package acprpc

import (
	"context"

	"github.com/acpkit/acprpc/internal/wire"
)

// peerCancelled cancels, with ErrPeerCancelled, the peer's request in flight
// whose raw ID the protocol's cancel notification m names. It runs on the
// read goroutine, ahead of every queue. It is never answered: an unknown or
// finished ID and malformed params are only logged.
func (c *Conn) peerCancelled(m *message, raw []byte) {
	key, ok := wire.KeyOf(raw)
	if !ok {
		if msg, ok := c.peerWarned.malformedCancel.due("acprpc: ignoring cancel with malformed params"); ok {
			c.log.Warn(msg, "method", m.Method, "params", firstBytes(m.Params, peerTextShown))
		}
		return
	}
	c.stats.cancelsReceived.Add(1)
	r := c.incoming.get(key)
	if r == nil {
		c.log.Debug("acprpc: ignoring cancel for a request not in flight", "id", firstBytes(raw, peerTextShown))
		return
	}
	r.cancelWith(ErrPeerCancelled)
}

// sendCancel tells the peer, with the protocol's cancel, that our call id is
// no longer wanted, and returns which cancel was sent, for the error of a
// wait for the answer that runs out; the protocol may set co's wait for it.
// It never waits for the peer, so the caller returns even if the peer has
// stopped reading.
func (c *Conn) sendCancel(ctx context.Context, pc *pendingCall, id int64, co *callOptions) (how string) {
	f, how := c.acp.cancelCall(ctx, pc, id, co)
	if f != nil && c.writer.sendNow(f) != nil {
		return ""
	}
	c.stats.cancelsSent.Add(1)
	return how
}

// CancelRequest cancels the peer's request id on this side, for cause (nil
// means ErrCancelled): a limit was reached, a resource went away. The
// handler's context ends with that cause, and the request is answered as
// any cancelled request is: with the handler's result if it returns one,
// else its method's marker or -32800, and no later than Options.CancelGrace.
// It reports whether it cancelled the request: false if no request with
// that ID is in flight, or it was cancelled or answered already.
func (c *Conn) CancelRequest(id ID, cause error) bool {
	if id.IsZero() {
		return false
	}
	r := c.incoming.get(id.Key().key)
	if r == nil {
		return false
	}
	if cause == nil {
		cause = ErrCancelled
	}
	return r.cancelWith(cause)
}
