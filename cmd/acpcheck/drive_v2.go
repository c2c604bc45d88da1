package main

import (
	"errors"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv2"
)

// runV2 asks for v2 and, if the agent speaks it, checks v2's turns.
func (r *runner) runV2() {
	if !r.initializeV2() {
		return
	}
	if session, ok := r.newSession(); ok {
		r.turnV2(session)
	}
	r.cancelV2()
	r.entityCancelV2()
	r.closeV2()
	r.endConversation()
	r.wireRules()
}

// endConversation closes the agent's stdin and waits for it to exit (up to
// ExitWait) and for its output to end, or, for a remote agent, Settle: the
// whole conversation's rules then see all the agent wrote, a late second
// answer included.
func (r *runner) endConversation() {
	r.settle() // the client's last answers go out: a write after stdin's close would end the connection
	if r.agent == nil {
		return
	}
	_ = r.agent.stdin.Close()
	r.agent.awaitExit(r.o.ExitWait)
	r.drain()
}

// initializeV2 reports whether the agent answered v2.
func (r *runner) initializeV2() bool {
	ctx, cancel := r.bounded(r.o.Timeout)
	defer cancel()
	mark := r.w.next()
	res, err := acpv2.ToAgent.Initialize.Call(ctx, r.conn, acpv2.InitializeRequest{
		ProtocolVersion: 2, Info: acpv2.Implementation{Name: "acpcheck", Version: version},
	})
	req, _ := r.w.await(ctx, mark, sent(acpv2.MethodInitialize))
	notV2 := func(why string, args ...any) bool {
		for _, rule := range v2Rules {
			r.res.notBrought(rule, why, args...)
		}
		return false
	}
	var rpcErr *acprpc.Error
	switch {
	case err != nil && (ctx.Err() != nil || errors.Is(err, acprpc.ErrConnClosed)):
		r.res.fail(ruleV2Initialize, []int{req.Seq}, "initialize asking for v2 was not answered: %v", err)
		return notV2("initialize asking for v2 was not answered")
	case errors.As(err, &rpcErr):
		r.res.fail(ruleV2Initialize, r.linesOf(req), "initialize asking for v2 was answered with an error: %d %s", rpcErr.Code, rpcErr.Message)
		return notV2("initialize asking for v2 failed")
	case err != nil:
		// A v1 answer does not decode as v2's: the agent chose v1.
		return r.v1Answer(req, notV2)
	case res.ProtocolVersion > 2:
		r.res.fail(ruleV2Initialize, r.linesOf(req), "asked for protocolVersion 2, the agent answered %d", res.ProtocolVersion)
		return notV2("the agent answered a version above 2")
	case res.ProtocolVersion < 2:
		r.res.pass(ruleV2Initialize)
		return notV2("the agent does not offer v2 (it answered protocolVersion %d)", res.ProtocolVersion)
	}
	r.res.pass(ruleV2Initialize)
	return true
}

// v1Answer takes an answer to initialize that v2's types refused: a v1
// agent's, which is fine, or something else.
func (r *runner) v1Answer(req Line, notV2 func(string, ...any) bool) bool {
	ans, ok := r.answer(req, 0)
	var v struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	if ok && ans.msg.Result != nil && jsonInto(ans.msg.Result, &v) && v.ProtocolVersion == 1 {
		r.res.pass(ruleV2Initialize)
		return notV2("the agent does not offer v2 (it answered protocolVersion 1)")
	}
	r.res.fail(ruleV2Initialize, r.linesOf(req), "the answer to initialize asking for v2 is neither v2's nor v1's")
	return notV2("initialize asking for v2 failed")
}

// isIdle matches the idle state_update of session.
func isIdle(session string) func(Line) bool {
	return func(l Line) bool {
		return l.Dir == fromAgent && isIdleUpdate(l.msg) && l.msg.sessionID() == session
	}
}

// idles lists the idle state_updates of session after a line.
func (r *runner) idles(session string, after int) []int {
	var out []int
	for _, l := range r.w.all()[after:] {
		if isIdle(session)(l) {
			out = append(out, l.Seq)
		}
	}
	return out
}

// awaitIdle waits up to d for session's next idle state_update after a line.
func (r *runner) awaitIdle(session string, after int, d time.Duration) (Line, bool) {
	ctx, cancel := r.bounded(d)
	defer cancel()
	return r.w.await(ctx, after+1, isIdle(session))
}

// promptAnswerV2 checks a v2 prompt's answer: its messageId.
func (r *runner) promptAnswerV2(p prompt) {
	ans, ok := r.answer(p.req, r.o.Timeout)
	switch {
	case !ok:
		r.res.fail(ruleV2PromptAnswer, []int{p.req.Seq}, "the prompt was not answered within %s", r.o.Timeout)
	case ans.msg.Error != nil:
		r.res.fail(ruleV2PromptAnswer, []int{p.req.Seq, ans.Seq}, "the prompt was answered with error %d %q", ans.msg.Error.Code, ans.msg.Error.Message)
	case ans.msg.resultMember("messageId") == "":
		r.res.fail(ruleV2PromptAnswer, []int{p.req.Seq, ans.Seq}, "the prompt's answer has no messageId (v1's stopReason answer is not v2's)")
	default:
		r.res.pass(ruleV2PromptAnswer)
	}
}

// oneIdle checks that the work a prompt started ended with one idle
// state_update, watching Settle longer for a second.
func (r *runner) oneIdle(p prompt) {
	r.settle()
	session := p.req.msg.sessionID()
	if idles := r.idles(session, p.req.Seq); len(idles) != 1 {
		r.res.fail(ruleV2OneIdle, append([]int{p.req.Seq}, idles...), "one foreground work ended with %d idle state_updates", len(idles))
		return
	}
	r.res.pass(ruleV2OneIdle)
}

// turnV2 runs a v2 turn to its end.
func (r *runner) turnV2(session string) {
	p, ok := r.startPrompt(session, r.o.Prompt)
	if !ok {
		r.res.notBrought(ruleV2PromptAnswer, "the prompt could not be sent")
		return
	}
	r.promptAnswerV2(p)
	if _, ok := r.awaitIdle(session, p.req.Seq, r.o.Timeout); !ok {
		r.res.fail(ruleV2OneIdle, []int{p.req.Seq}, "the prompt's work did not end with an idle state_update within %s", r.o.Timeout)
		return
	}
	r.oneIdle(p)
}

// underwayV2 is underway for v2, where the answer comes early and an idle
// state_update ends the work.
func (r *runner) underwayV2(p prompt) bool {
	session := p.req.msg.sessionID()
	ctx, cancel := r.bounded(r.o.CancelAfter)
	_, _ = r.w.await(ctx, p.req.Seq+1, func(l Line) bool {
		return l.Dir == fromAgent && l.msg.Method != "" && l.msg.sessionID() == session && !isIdle(session)(l) &&
			l.msg.updateMember("state") != "running"
	})
	cancel()
	r.settle()
	return len(r.idles(session, p.req.Seq)) == 0
}

// cancelV2 cancels a v2 turn with session/cancel: one idle state_update,
// stopReason "cancelled", and each request the work had open at the client
// cancelled with $/cancel_request.
func (r *runner) cancelV2() {
	session, p, underway, ok := r.slowTurn(r.underwayV2)
	if !ok {
		return
	}
	defer r.hold.Store(false)
	if !underway {
		r.res.notBrought(ruleV2CancelIdle, "the slow prompt's work ended before it could be cancelled: give -slow-prompt a prompt that takes longer")
		return
	}
	r.promptAnswerV2(p)
	open := r.openRequests(session)
	cancelLine := r.cancelSession(session)
	idle, ok := r.awaitIdle(session, cancelLine.Seq, r.o.CancelWait)
	switch {
	case !ok:
		r.res.fail(ruleV2CancelIdle, []int{p.req.Seq, cancelLine.Seq}, "no idle state_update within %s of session/cancel", r.o.CancelWait)
		return
	case idle.msg.updateMember("stopReason") != "cancelled":
		r.res.fail(ruleV2CancelIdle, []int{cancelLine.Seq, idle.Seq}, "the cancelled work ended with stopReason %q", idle.msg.updateMember("stopReason"))
	default:
		r.res.pass(ruleV2CancelIdle)
	}
	r.ownRequestsCancelled(open, cancelLine, idle)
	r.oneIdle(p)
}

// openRequests lists the agent's requests of a session not answered yet.
func (r *runner) openRequests(session string) []Line {
	var open []Line
	lines := r.w.all()
	for _, l := range lines {
		if l.Dir != fromAgent || !l.msg.isRequest() || l.msg.sessionID() != session {
			continue
		}
		if len(r.linesOfAnswer(lines, l)) == 0 {
			open = append(open, l)
		}
	}
	return open
}

// linesOfAnswer lists the client's answers to one of the agent's requests.
func (r *runner) linesOfAnswer(lines []Line, req Line) []int {
	var out []int
	for _, l := range lines[req.Seq:] {
		if l.Dir == toAgent && l.msg.answers(req.msg.ID) {
			out = append(out, l.Seq)
		}
	}
	return out
}

// whyNoOpenRequest says why own-requests-cancelled was not brought about.
const whyNoOpenRequest = "the cancelled work had no request open at the client (in v1, other than session/request_permission: offer a terminal with -offer-terminal)"

// ownRequestsCancelled checks that each request open at the cancel got
// the agent's $/cancel_request before the work's end.
func (r *runner) ownRequestsCancelled(open []Line, cancelLine, end Line) {
	rule := ruleOwnRequests
	if r.v2 {
		rule = ruleV2OwnRequests
	}
	if len(open) == 0 {
		r.res.notBrought(rule, whyNoOpenRequest)
		return
	}
	until := end.Seq
	if r.o.isRemote() && r.o.Remote.isStreamableHTTP() {
		// The agent's $/cancel_request names no session, and comes on the
		// connection's stream; the work's end comes on the session's. SSE
		// streams are not ordered with one another: the cancel counts if it
		// comes within Settle of the end.
		r.settle()
		until = r.w.next()
	}
	lines := r.w.all()
	for _, req := range open {
		found := false
		for _, l := range lines[cancelLine.Seq : until-1] {
			if l.Dir == fromAgent && l.msg.Method == "$/cancel_request" && string(l.msg.param("requestId")) == string(req.msg.ID) {
				found = true
				break
			}
		}
		if !found {
			r.res.fail(rule, []int{req.Seq, cancelLine.Seq, end.Seq}, "the agent's %s (ID %s) was open when the work was cancelled, and the agent sent no $/cancel_request for it before the work ended", req.msg.Method, req.msg.ID)
		}
	}
	r.res.pass(rule)
}

// closeV2 closes a session whose work is under way: session/close is
// answered, and the work ends with an idle state_update.
func (r *runner) closeV2() {
	session, p, underway, ok := r.slowTurn(r.underwayV2)
	if !ok {
		return
	}
	defer r.hold.Store(false)
	if !underway {
		r.res.notBrought(ruleV2Close, "the slow prompt's work ended before the session could be closed")
		return
	}
	ctx, cancel := r.bounded(r.o.CancelWait)
	defer cancel()
	mark := r.w.next()
	_, err := acpv2.ToAgent.SessionClose.Call(ctx, r.conn, acpv2.CloseSessionRequest{SessionID: acpv2.SessionID(session)})
	req, _ := r.w.await(ctx, mark, sent(acpv2.MethodSessionClose))
	var rpcErr *acprpc.Error
	switch {
	case errors.As(err, &rpcErr) && rpcErr.Code == acprpc.CodeMethodNotFound:
		r.res.notBrought(ruleV2Close, "the agent does not serve session/close")
		return
	case err != nil:
		r.res.fail(ruleV2Close, r.linesOf(req), "session/close failed: %v", err)
		return
	}
	if _, ok := r.awaitIdle(session, p.req.Seq, r.o.CancelWait); !ok {
		r.res.fail(ruleV2Close, r.linesOf(req), "the closed session's work did not end with an idle state_update within %s", r.o.CancelWait)
		return
	}
	r.res.pass(ruleV2Close)
}
