package acprpc

import (
	"context"
)

// onSessionCancel cancels the session's v2 foreground work and every
// incoming request in flight whose params name the session, and returns the
// requests. It runs on the read goroutine for the peer's session/cancel,
// ahead of every queue.
func (c *Conn) onSessionCancel(sessionID string) []*inRequest {
	if sessionID == "" {
		return nil
	}
	hit := c.incoming.inScope(sessionID)
	for _, r := range hit {
		r.cancelWith(ErrSessionCancelled)
	}
	for _, w := range c.acp.foreground.unended(sessionID) {
		w.cancelWith(ErrSessionCancelled)
	}
	return hit
}

// CancelSession is a client's cancellation of a prompt turn, as ACP's
// diagram draws it. It takes the session's ID as the generated types hold
// it (acpv1.SessionID, acpv2.SessionID) or as a string, so a client passes
// session.SessionID as it came:
//
//	err := acprpc.CancelSession(ctx, conn, session.SessionID)
//
// It sends the agent session/cancel for sessionID on c, then:
//
//   - answers at once, with the cancelled outcome, every
//     session/request_permission of that session the agent has in flight
//     here, as ACP requires of clients; their contexts end with
//     ErrSessionCancelled, even when the agent's cascade cancels one first;
//   - leaves the session's other requests (terminal/create, fs/...) to the
//     agent's cascade: the agent sends $/cancel_request for each, and each is
//     answered as cancelled then. An agent that does not cancel one within
//     Options.CancelGrace has it cancelled here, so a client is never held
//     by an agent that ignores session/cancel.
//
// The caller of the session's session/prompt then receives the agent's
// stopReason "cancelled" (with Options.ReportCancelledTurns, also from an
// agent that answers "end_turn"). Ending the prompt call's context does
// all of this too (Options.TurnCancelWait). session/cancel is queued before any local
// request is cancelled, so the agent always reads it ahead of their cancelled
// answers.
func CancelSession[S ~string](ctx context.Context, c *Conn, sessionID S) error {
	return c.cancelSession(ctx, string(sessionID))
}

// cancelSession is CancelSession, also for a prompt call whose context
// ended (acp_turn.go).
func (c *Conn) cancelSession(ctx context.Context, id string) error {
	c.cancelTurns(id)
	preempts := id != "" && c.protocol().clientPreempts // v2 leaves every request to the agent's $/cancel_request
	if preempts {
		// The agent may cascade a $/cancel_request for a permission request as
		// soon as it reads session/cancel: the cause is ours either way.
		perms, _ := c.sessionRequests(id)
		for _, r := range perms {
			r.decide(ErrSessionCancelled)
		}
	}
	err := c.Notify(ctx, methodSessionCancel, sessionParams{SessionID: id})
	if !preempts {
		return err
	}
	perms, later := c.sessionRequests(id)
	for _, r := range perms {
		r.cancelWith(ErrSessionCancelled)
	}
	if len(later) > 0 {
		c.afterGrace(func() {
			for _, r := range later {
				r.cancelWith(ErrSessionCancelled) // a no-op for one the agent cancelled or that was answered
			}
		})
	}
	return err
}

// sessionRequests splits the session's requests in flight here into its
// session/request_permission requests, which a client answers itself when
// it cancels the session, and the others, left to the agent's cascade.
func (c *Conn) sessionRequests(sessionID string) (perms, others []*inRequest) {
	for _, r := range c.incoming.inScope(sessionID) {
		if r.req.Method == methodRequestPermission {
			perms = append(perms, r)
		} else {
			others = append(others, r)
		}
	}
	return perms, others
}

type sessionParams struct {
	SessionID string `json:"sessionId"`
}
