package acprpc

import (
	"context"
	"slices"
)

// ACP's session methods. A session cancellation reads only params.sessionId;
// the rest of ACP's schema is the application's business.
const (
	MethodSessionCancel = "session/cancel"
	MethodSessionClose  = "session/close"
)

// isSessionCancel reports whether a notification ends its session's work.
func (c *Conn) isSessionCancel(method string) bool {
	return slices.Contains(c.opts.SessionCancelMethods, method)
}

// cancelSession cancels every incoming request in flight whose params name
// the session. It runs on the read goroutine for the peer's session/cancel,
// ahead of every queue.
func (c *Conn) cancelSession(sessionID string) int {
	if sessionID == "" {
		return 0
	}
	hit := c.incoming.matching(func(r *inRequest) bool { return r.req.SessionID == sessionID })
	for _, r := range hit {
		r.cancelWith(ErrSessionCancelled)
	}
	return len(hit)
}

// CancelSession is a client's cancellation of a prompt turn. It sends the
// agent session/cancel for sessionID, and cancels, on this side, every
// request of that session the agent has in flight here (its pending
// session/request_permission calls), so they are answered with their
// cancelled markers as ACP requires of clients. The caller of the session's
// session/prompt then receives the agent's stopReason "cancelled".
//
// session/cancel is queued before the local requests are cancelled, so the
// agent always reads it ahead of their cancelled answers.
func (c *Conn) CancelSession(ctx context.Context, sessionID string) error {
	err := c.Notify(ctx, MethodSessionCancel, sessionParams{SessionID: sessionID})
	c.cancelSession(sessionID)
	return err
}

type sessionParams struct {
	SessionID string `json:"sessionId"`
}
