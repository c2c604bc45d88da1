package acprpc

import (
	"encoding/json"
	"sync/atomic"
)

// methodSessionPrompt's answer on v1 carries the turn's stopReason; these
// are the two that Options.ReportCancelledTurns tells apart.
const (
	endTurnJSON   = `"end_turn"`
	cancelledJSON = `"cancelled"`
)

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
	var req struct {
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	_ = json.Unmarshal(f.Buf.Bytes(), &req) // a prompt without a string sessionId is watched for its own cancel alone
	pc.turn = &turnWatch{sessionID: req.Params.SessionID}
}

// cancelTurn records that the call's own cancel is being sent.
func (pc *pendingCall) cancelTurn() {
	if pc.turn != nil {
		pc.turn.cancelled.Store(true)
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
		if pc.turn != nil && pc.turn.sessionID == sessionID {
			pc.turn.cancelled.Store(true)
		}
	}
}

// turnResult is the result the caller of a watched prompt gets: the
// agent's, with an end_turn stopReason turned into cancelled when this
// side cancelled the turn first, as ACP requires of the agent and as many
// v1 agents fail to do. Every other member is kept.
func (pc *pendingCall) turnResult(result []byte) []byte {
	if pc.turn == nil || !pc.turn.cancelled.Load() {
		return result
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(result, &members) != nil || string(members["stopReason"]) != endTurnJSON {
		return result
	}
	members["stopReason"] = json.RawMessage(cancelledJSON)
	out, err := json.Marshal(members)
	if err != nil {
		return result
	}
	return out
}
