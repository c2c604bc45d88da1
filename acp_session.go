package acprpc

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/acpkit/acprpc/internal/wire"
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
// agent that answers "end_turn"). session/cancel is queued before any local
// request is cancelled, so the agent always reads it ahead of their cancelled
// answers.
func CancelSession[S ~string](ctx context.Context, c *Conn, sessionID S) error {
	id := string(sessionID)
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

// turnWatch follows one of this side's session/prompt calls, with
// Options.ReportCancelledTurns, to learn whether this side cancelled its
// turn before the answer came.
type turnWatch struct {
	sessionID string
	cancelled atomic.Bool // set by CancelSession for the session, or the call's own cancel
}

// watchTurn starts following pc when it is a prompt turn and the options
// ask for it. f is the call's request, whose params name the session.
func (c *Conn) watchTurn(pc *pendingCall, f *frame) {
	if !c.opts.ReportCancelledTurns || pc.method != methodSessionPrompt {
		return
	}
	pc.acp.turn = &turnWatch{} // a prompt without a string sessionId is watched for its own cancel alone
	if sid := wire.Member(wire.Member(f.Buf.Bytes(), "params"), "sessionId"); len(sid) > 0 && sid[0] == '"' {
		pc.acp.turn.sessionID = wire.Unquote(sid)
	}
}

// cancelTurns records that this side is cancelling the session's turns:
// the answers read from now on to its prompt calls are reported cancelled.
func (c *Conn) cancelTurns(sessionID string) {
	if !c.opts.ReportCancelledTurns || sessionID == "" {
		return
	}
	c.calls.mu.Lock()
	defer c.calls.mu.Unlock()
	for _, pc := range c.calls.m {
		if pc.acp.turn != nil && pc.acp.turn.sessionID == sessionID {
			pc.acp.turn.cancelled.Store(true)
		}
	}
}

// turnResult is the result the caller of a watched prompt gets: the
// agent's, with an end_turn stopReason turned into cancelled when this
// side cancelled the turn first, as ACP requires of the agent and as many
// v1 agents fail to do. Every other member is kept.
func (pc *pendingCall) turnResult(result []byte) []byte {
	if pc.acp.turn == nil || !pc.acp.turn.cancelled.Load() {
		return result
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(result, &members) != nil || string(members["stopReason"]) != `"`+stopReasonEndTurn+`"` {
		return result
	}
	members["stopReason"] = json.RawMessage(`"` + stopReasonCancelled + `"`)
	out, err := json.Marshal(members)
	if err != nil {
		return result
	}
	return out
}
