package main

import (
	"encoding/json"
	"fmt"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
)

// stringID is the ID of the request acpcheck sends with a string ID: a
// string of digits, which an agent that keeps IDs as numbers answers as
// the number.
const stringID = `"900001"`

// stringIDProbe opens a session with a request whose ID is a string, which
// acprpc's Conn never sends: its answer must carry the string. The Conn
// takes the answer for one to an ID it never used, and drops it.
func (r *runner) stringIDProbe() {
	probe := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, stringID, r.o.Cwd)
	seq, err := r.t.inject(probe)
	if err != nil {
		r.res.notBrought(ruleIDEcho, "the request with a string ID could not be written: %v", err)
		return
	}
	ctx, cancel := r.bounded(r.o.Timeout)
	defer cancel()
	if _, ok := r.w.await(ctx, seq+1, func(l Line) bool {
		return l.Dir == fromAgent && l.msg.isAnswer() && looseID(l.msg.ID) == looseID(json.RawMessage(stringID))
	}); !ok {
		r.res.notBrought(ruleIDEcho, "the request with the string ID %s was not answered within %s", stringID, r.o.Timeout)
	}
}

// extRequest judges the answer (or its absence) to the _-prefixed request
// the notifications scenario ends with.
func (r *runner) extRequest(answered bool) {
	if answered {
		r.res.pass(ruleExtRequest)
		return
	}
	req, _ := r.w.await(r.ctx, 1, sent(extMethod))
	r.res.fail(ruleExtRequest, []int{req.Seq}, "the request for %s, an extension method the agent does not know, was not answered within %s", extMethod, r.o.Timeout)
}

// extMethod is the extension method no agent knows.
const extMethod = "_acpcheck/ping"

// underwayTurn starts the slow prompt in a fresh session, the client
// holding the agent's requests, and returns it once under way (the caller
// releases the hold); a turn that ended first leaves rule not brought about,
// saying it ended before what was to be done, and ok false.
func (r *runner) underwayTurn(rule Rule, what string) (session string, p prompt, ok bool) {
	session, p, underway, ok := r.slowTurn(r.underway)
	if !ok {
		return "", prompt{}, false
	}
	if !underway {
		r.res.notBrought(rule, "the slow prompt's turn ended before %s", what)
		r.answer(p.req, r.o.Timeout)
		r.hold.Store(false)
		return "", prompt{}, false
	}
	return session, p, true
}

// sessionClose closes a v1 session whose turn is under way, when the agent
// advertises sessionCapabilities.close: the turn must end as session/cancel
// ends it, and session/close be answered.
func (r *runner) sessionClose() {
	if !r.canClose {
		r.res.notBrought(ruleSessionClose, "the agent does not advertise sessionCapabilities.close")
		return
	}
	session, p, ok := r.underwayTurn(ruleSessionClose, "the session could be closed")
	if !ok {
		return
	}
	defer r.hold.Store(false)
	ctx, cancel := r.bounded(r.o.CancelWait)
	defer cancel()
	mark := r.w.next()
	_, err := acpv1.ToAgent.SessionClose.Call(ctx, r.conn, acpv1.CloseSessionRequest{SessionID: acpv1.SessionID(session)})
	closeReq, _ := r.w.await(ctx, mark, sent(acpv1.MethodSessionClose))
	ans, answered := r.answer(p.req, r.o.CancelWait)
	r.judgeCancelledTurn(ruleSessionClose, "session/close", p, closeReq, ans, answered)
	if err != nil {
		r.res.fail(ruleSessionClose, r.linesOf(closeReq), "session/close failed: %v", err)
	}
}

// cancelMeta cancels a turn with a session/cancel whose params carry
// _meta, which every ACP type allows.
func (r *runner) cancelMeta() {
	session, p, ok := r.underwayTurn(ruleCancelMeta, "it could be cancelled")
	if !ok {
		return
	}
	defer r.hold.Store(false)
	seq, err := r.t.inject(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q,"_meta":{"acpcheck":{"probe":"cancel-meta"}}}}`, session))
	if err != nil {
		r.res.notBrought(ruleCancelMeta, "the session/cancel could not be written: %v", err)
		return
	}
	r.released.release() // the client's part of a cancel: its permission requests answered cancelled
	r.underWay = append(r.underWay, seq)
	cancelLine := r.w.all()[seq-1]
	ans, answered := r.answer(p.req, r.o.CancelWait)
	r.judgeCancelledTurn(ruleCancelMeta, "a session/cancel carrying _meta", p, cancelLine, ans, answered)
}

// judgeCancelledTurn checks the answer to a prompt whose turn by was meant
// to cancel: stopReason "cancelled" within CancelWait. A turn not ended is
// then ended with session/cancel, so that the scenarios after it start
// clean.
func (r *runner) judgeCancelledTurn(rule Rule, by string, p prompt, cause, ans Line, answered bool) {
	lines := []int{p.req.Seq, cause.Seq, ans.Seq}
	switch {
	case !answered:
		r.res.fail(rule, lines[:2], "the prompt was not answered within %s of %s", r.o.CancelWait, by)
		_ = acprpc.CancelSession(r.ctx, r.conn, p.req.msg.sessionID())
		r.answer(p.req, r.o.CancelWait)
	case ans.msg.stopReason() != string(acpv1.StopReasonCancelled):
		r.res.fail(rule, lines, "the prompt was answered %s after %s, where the turn it cancelled owes stopReason \"cancelled\"", answerText(ans), by)
	default:
		r.res.pass(rule)
	}
}

// idleCancel sends session/cancel for a session whose turn has ended, and
// for a session that does not exist, then a prompt in the first: the
// cancels must be ignored, and the prompt get a turn that ends by itself.
func (r *runner) idleCancel(session string) {
	mark := r.w.next()
	_ = acprpc.CancelSession(r.ctx, r.conn, session)
	_ = acprpc.CancelSession(r.ctx, r.conn, "acpcheck-no-such-session")
	cancelLine, _ := r.w.await(r.ctx, mark, sent(acpv1.MethodSessionCancel))
	r.settle()
	p, ok := r.startPrompt(session, r.o.Prompt)
	if !ok {
		r.res.notBrought(ruleIdleCancel, "the prompt could not be sent")
		return
	}
	ans, ok := r.answer(p.req, r.o.Timeout)
	lines := []int{cancelLine.Seq, p.req.Seq, ans.Seq}
	switch {
	case !ok:
		r.res.fail(ruleIdleCancel, lines[:2], "the prompt after a session/cancel sent while no turn ran was not answered within %s", r.o.Timeout)
		p.cancel()
	case ans.msg.Error != nil || ans.msg.stopReason() == "" || ans.msg.stopReason() == string(acpv1.StopReasonCancelled):
		r.res.fail(ruleIdleCancel, lines, "the prompt after a session/cancel sent while no turn ran was answered %s: the stale cancel ended a turn it was never sent for", answerText(ans))
	default:
		r.res.pass(ruleIdleCancel)
	}
}
