package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/acpv2"
)

// initialize negotiates v1. An agent that exits or closes its output before
// answering could not be run.
func (r *runner) initialize() error {
	ctx, cancel := r.bounded(r.o.Timeout)
	defer cancel()
	mark := r.w.next()
	res, err := acpv1.ToAgent.Initialize.Call(ctx, r.conn, acpv1.InitializeRequest{
		ProtocolVersion:    1,
		ClientInfo:         &acpv1.Implementation{Name: "acpcheck", Version: version},
		ClientCapabilities: acpv1.ClientCapabilities{Terminal: r.o.OfferTerminal},
	})
	req, _ := r.w.await(ctx, mark, sent(acpv1.MethodInitialize))
	r.initID = string(req.msg.ID)
	r.canClose = err == nil && res.AgentCapabilities.SessionCapabilities.Close != nil
	switch {
	case errors.Is(err, acprpc.ErrConnClosed) && r.o.isRemote():
		return fmt.Errorf("%w: the connection ended before initialize was answered (%v)", errNotRun, err)
	case errors.Is(err, acprpc.ErrConnClosed):
		return fmt.Errorf("%w: it ended its output before answering initialize (%v)%s", errNotRun, err, r.exitNote())
	case r.transportRefused(err):
		return fmt.Errorf("%w: the server refused initialize: %v", errNotRun, err)
	case err != nil && ctx.Err() != nil:
		r.res.fail(ruleInitialize, []int{req.Seq}, "initialize was not answered within %s", r.o.Timeout)
	case err != nil:
		r.res.fail(ruleInitialize, r.linesOf(req), "initialize was answered with an error: %v", err)
	case res.ProtocolVersion != 1:
		r.res.fail(ruleInitialize, r.linesOf(req), "asked for protocolVersion 1, the agent answered %d", res.ProtocolVersion)
	default:
		r.res.pass(ruleInitialize)
	}
	return nil
}

// newSession opens a session; ok is false if the agent would not.
func (r *runner) newSession() (string, bool) {
	ctx, cancel := r.bounded(r.o.Timeout)
	defer cancel()
	mark := r.w.next()
	id, err := r.callSessionNew(ctx)
	if err != nil || id == "" {
		req, _ := r.w.await(ctx, mark, sent(acpv1.MethodSessionNew))
		why := fmt.Sprintf("session/new failed: %v", err)
		if err == nil {
			why = "session/new was answered without a sessionId"
		}
		r.res.fail(ruleSessionNew, r.linesOf(req), "%s", why)
		for _, rule := range []Rule{rulePromptTurn, ruleCancelStop, ruleTurnAfter, ruleCancelRequest} {
			r.res.notBrought(rule, "%s", why)
		}
		return "", false
	}
	r.res.pass(ruleSessionNew)
	return id, true
}

func (r *runner) callSessionNew(ctx context.Context) (string, error) {
	if r.v2 {
		res, err := acpv2.ToAgent.SessionNew.Call(ctx, r.conn, acpv2.NewSessionRequest{Cwd: acpv2.AbsolutePath(r.o.Cwd)})
		return string(res.SessionID), err
	}
	res, err := acpv1.ToAgent.SessionNew.Call(ctx, r.conn, acpv1.NewSessionRequest{Cwd: r.o.Cwd, MCPServers: []acpv1.MCPServer{}})
	return string(res.SessionID), err
}

// prompt is a session/prompt in flight.
type prompt struct {
	req    Line
	cancel context.CancelFunc // ends the call's context: acprpc sends $/cancel_request (CancelRequestOnly)
}

// promptOptions are a prompt call's: its cancel is $/cancel_request alone,
// which the cancel-request rule checks (session/cancel is sent by
// CancelSession where a rule wants it), and the answer is waited for.
func (r *runner) promptOptions() []acprpc.CallOption {
	return []acprpc.CallOption{acprpc.WaitAfterCancel(r.o.CancelWait), acprpc.CancelRequestOnly()}
}

// startPrompt sends a prompt and returns once it is on the wire.
func (r *runner) startPrompt(session, text string) (prompt, bool) {
	ctx, cancel := context.WithCancel(r.ctx)
	mark := r.w.next()
	r.calls.Go(func() {
		if r.v2 {
			_, _ = acpv2.ToAgent.SessionPrompt.Call(ctx, r.conn, acpv2.TextPrompt(acpv2.SessionID(session), text), r.promptOptions()...)
			return
		}
		_, _ = acpv1.ToAgent.SessionPrompt.Call(ctx, r.conn, acpv1.TextPrompt(acpv1.SessionID(session), text), r.promptOptions()...)
	})
	wait, stop := r.bounded(r.o.Timeout)
	defer stop()
	req, ok := r.w.await(wait, mark, func(l Line) bool {
		return l.Dir == toAgent && l.msg.Method == acpv1.MethodSessionPrompt && l.msg.sessionID() == session
	})
	return prompt{req: req, cancel: cancel}, ok
}

// underway waits for a prompt's turn to be under way: its first update or
// request to the client, or CancelAfter, and then Settle more, so that a turn
// about to end is not taken for one still running. It reports false if the
// prompt was answered meanwhile.
func (r *runner) underway(p prompt) bool {
	session := p.req.msg.sessionID()
	ctx, cancel := r.bounded(r.o.CancelAfter)
	defer cancel()
	l, _ := r.w.await(ctx, p.req.Seq+1, func(l Line) bool {
		return l.Dir == fromAgent && (l.msg.answers(p.req.msg.ID) || l.msg.Method != "" && l.msg.sessionID() == session)
	})
	if l.msg.answers(p.req.msg.ID) {
		return false
	}
	_, answered := r.answer(p.req, r.o.Settle)
	return !answered
}

// promptTurn runs one turn to its end.
func (r *runner) promptTurn(session string) {
	p, ok := r.startPrompt(session, r.o.Prompt)
	if !ok {
		r.res.notBrought(rulePromptTurn, "the prompt could not be sent")
		return
	}
	ans, ok := r.answer(p.req, r.o.Timeout)
	switch {
	case !ok:
		r.res.fail(rulePromptTurn, []int{p.req.Seq}, "the prompt was not answered within %s", r.o.Timeout)
		p.cancel()
		return
	case ans.msg.Error != nil:
		if call, refusal, ok := r.uninvitedCall(session, p.req.Seq, ans.Seq); ok {
			r.res.fail(rulePromptTurn, []int{call.Seq, refusal.Seq, p.req.Seq, ans.Seq}, "the agent called %s, which acpcheck never offered (its clientCapabilities say so), and was answered -32601; the prompt was then answered with an error: %d %s", call.msg.Method, ans.msg.Error.Code, ans.msg.Error.Message)
			break
		}
		r.res.fail(rulePromptTurn, []int{p.req.Seq, ans.Seq}, "the prompt was answered with an error: %d %s", ans.msg.Error.Code, ans.msg.Error.Message)
	case ans.msg.stopReason() == "":
		r.res.fail(rulePromptTurn, []int{p.req.Seq, ans.Seq}, "the prompt's answer has no stopReason")
	default:
		r.res.pass(rulePromptTurn)
	}
	r.freshUpdates = len(r.contentUpdates(session, p.req.Seq, ans.Seq))
}

// uninvitedCall finds the first request of session's turn, between two
// lines, that the agent sent for a method the client never offered, which
// the client refused -32601: the first thing that went wrong in a turn that
// failed after it.
func (r *runner) uninvitedCall(session string, after, before int) (call, refusal Line, ok bool) {
	lines := r.w.all()
	for _, l := range lines[after:min(before, len(lines))] {
		if l.Dir != fromAgent || !l.msg.isRequest() || l.msg.sessionID() != session {
			continue
		}
		for _, a := range lines[l.Seq:min(before, len(lines))] {
			if a.Dir == toAgent && a.msg.answers(l.msg.ID) && a.msg.Error != nil && a.msg.Error.Code == acprpc.CodeMethodNotFound {
				return l, a, true
			}
		}
	}
	return Line{}, Line{}, false
}

// slowTurn opens a session and starts the slow prompt in it, the client
// holding the agent's requests, for a check that ends the turn midway. ok
// is false when no session opened (a check has said so already); underway
// is false when the turn ended, or never got under way, by itself, and then
// the hold is released.
func (r *runner) slowTurn(isUnderway func(prompt) bool) (session string, p prompt, underway, ok bool) {
	session, ok = r.newSession()
	if !ok {
		return "", prompt{}, false, false
	}
	r.hold.Store(true)
	r.released.reset()
	p, started := r.startPrompt(session, r.o.SlowPrompt)
	if !started || !isUnderway(p) {
		r.hold.Store(false)
		return session, p, false, true
	}
	return session, p, true, true
}

// sessionCancel cancels a turn with session/cancel, then sends the quick
// prompt in the same session.
func (r *runner) sessionCancel() {
	session, p, underway, ok := r.slowTurn(r.underway)
	if !ok {
		return
	}
	if !underway {
		r.res.notBrought(ruleCancelStop, "the slow prompt's turn ended before it could be cancelled: give -slow-prompt a prompt that takes longer")
		r.res.notBrought(ruleTurnAfter, "no turn was cancelled")
		r.answer(p.req, r.o.Timeout)
		return
	}
	// In v1 the client answers its permission requests itself on a cancel;
	// the others are the agent's to cancel.
	var open []Line
	permission := false // a permission request open at the cancel, which the client answers cancelled
	for _, l := range r.openRequests(session) {
		if l.msg.Method != acpv1.MethodSessionRequestPermission {
			open = append(open, l)
		}
		permission = permission || l.msg.Method == acpv1.MethodSessionRequestPermission
	}
	cancelLine := r.cancelSession(session)
	// The turn holds its requests to the client open until the cancel: its
	// answer right after the cancel is its answer to it.
	r.underWay = append(r.underWay, cancelLine.Seq)
	ans, ok := r.answer(p.req, r.o.CancelWait)
	r.hold.Store(false)
	if !ok {
		r.res.notBrought(ruleTurnAfter, "the cancelled prompt was not answered")
		r.answer(p.req, r.o.Timeout)
		return
	}
	r.ownRequestsCancelled(open, cancelLine, ans)
	r.turnAfterCancel(session)
	if permission && ans.msg.Error == nil && ans.msg.stopReason() == string(acpv1.StopReasonCancelled) {
		r.cancelNothingOpen()
	}
}

// cancelSession sends session/cancel for session (the method's name is
// the same in v1 and v2) and returns its line.
func (r *runner) cancelSession(session string) Line {
	mark := r.w.next()
	_ = acprpc.CancelSession(r.ctx, r.conn, session)
	cancelLine, _ := r.awaitSent(mark, sent(acpv1.MethodSessionCancel))
	return cancelLine
}

// cancelNothingOpen cancels a slow turn again, in a fresh session, its
// permission requests granted, so that none is open at the cancel: a turn
// that ended "cancelled" while its permission request was answered with the
// cancelled outcome may have followed that outcome, not session/cancel,
// and proves nothing (see cancelledPrompt). A turn not answered within
// CancelWait is cancelled with $/cancel_request too, and left.
func (r *runner) cancelNothingOpen() {
	session, ok := r.newSession()
	if !ok {
		return
	}
	p, started := r.startPrompt(session, r.o.SlowPrompt)
	if !started || !r.underway(p) {
		r.answer(p.req, r.o.Timeout)
		return
	}
	r.cancelSession(session)
	if _, ok := r.answer(p.req, r.o.CancelWait); !ok {
		p.cancel()
	}
}

// turnAfterCancel sends the quick prompt in a session whose turn was just
// cancelled: it must get a turn as in a fresh session.
func (r *runner) turnAfterCancel(session string) {
	p, ok := r.startPrompt(session, r.o.Prompt)
	if !ok {
		r.res.notBrought(ruleTurnAfter, "the prompt could not be sent")
		return
	}
	ans, ok := r.answer(p.req, r.o.Timeout)
	if !ok {
		r.res.fail(ruleTurnAfter, []int{p.req.Seq}, "the prompt after the cancelled turn was not answered within %s", r.o.Timeout)
		p.cancel()
		return
	}
	updates := r.contentUpdates(session, p.req.Seq, ans.Seq)
	switch {
	case r.freshUpdates == 0:
		r.res.notBrought(ruleTurnAfter, "the same prompt in a fresh session sent no update either")
	case len(updates) == 0:
		r.res.fail(ruleTurnAfter, []int{p.req.Seq, ans.Seq},
			"the prompt after the cancelled turn was answered %s with no update before the answer, where the same prompt in a fresh session sent %d",
			answerText(ans), r.freshUpdates)
	default:
		r.res.pass(ruleTurnAfter)
	}
}

// cancelRequest cancels a prompt in flight with $/cancel_request, which
// the monitor judges (cancel-request, see requestCancelledPrompt). v1 lets
// an agent ignore that cancel: a prompt not answered within CancelWait is
// then cancelled with session/cancel, and its answer is not
// cancel-request's.
func (r *runner) cancelRequest() {
	session, p, underway, ok := r.slowTurn(r.underway)
	if !ok {
		return
	}
	defer r.hold.Store(false)
	if !underway {
		r.res.notBrought(ruleCancelRequest, "the slow prompt's turn ended before it could be cancelled: give -slow-prompt a prompt that takes longer")
		r.answer(p.req, r.o.Timeout)
		return
	}
	mark := r.w.next()
	p.cancel()
	cancelLine, sentOK := r.awaitSent(mark, func(l Line) bool {
		return l.Dir == toAgent && l.msg.Method == "$/cancel_request" && string(l.msg.param("requestId")) == string(p.req.msg.ID)
	})
	if sentOK {
		r.underWay = append(r.underWay, cancelLine.Seq)
	}
	ans, ok := r.answer(p.req, r.o.CancelWait)
	switch {
	case !ok:
		_ = acprpc.CancelSession(r.ctx, r.conn, session)
		r.answer(p.req, r.o.Timeout)
	case ans.Seq < cancelLine.Seq:
		r.res.notBrought(ruleCancelRequest, "the slow prompt was answered before its $/cancel_request went out: give -slow-prompt a prompt that takes longer")
	}
}

// The probes of the notifications scenario: a cancel of an ID never used, a
// cancel of an answered ID, and a notification of an unknown method.
const unknownID = 987654321

func (r *runner) notifications() {
	probes := []string{
		fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}`, unknownID),
		fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%s}}`, r.initID),
		`{"jsonrpc":"2.0","method":"_acpcheck/notice","params":{}}`,
	}
	for _, probe := range probes {
		if _, err := r.t.inject(probe); err != nil {
			r.res.notBrought(ruleNoteUnanswered, "the probes could not be written: %v", err)
			return
		}
	}
	// A request after them: once it is answered, they have been read.
	ctx, cancel := r.bounded(r.o.Timeout)
	defer cancel()
	err := r.conn.Call(ctx, extMethod, struct{}{}, nil)
	if err != nil && (ctx.Err() != nil || errors.Is(err, acprpc.ErrConnClosed)) {
		r.extRequest(false)
		r.res.notBrought(ruleNoteUnanswered, "the agent answered no request after the probes")
		return
	}
	r.extRequest(true)
	r.settle()
}

// badInput writes a line that is not JSON (where the transport carries
// one), then a request for an unknown method, then opens a session: the
// connection must live through both.
func (r *runner) badInput() {
	seq, ok := r.parseErrorProbe()
	if !ok {
		return
	}
	ctx, cancel := r.bounded(r.o.Timeout)
	defer cancel()
	mark := r.w.next()
	err := r.conn.Call(ctx, "acpcheck/no_such_method", struct{}{}, nil)
	req, _ := r.w.await(ctx, mark, sent("acpcheck/no_such_method"))
	var rpcErr *acprpc.Error
	switch {
	case err != nil && (ctx.Err() != nil || errors.Is(err, acprpc.ErrConnClosed)) && seq == 0:
		r.res.fail(ruleMethodNotFound, r.linesOf(req), "the request for an unknown method was not answered: %v", err)
		return
	case err != nil && (ctx.Err() != nil || errors.Is(err, acprpc.ErrConnClosed)):
		lines := []int{seq} // the line that is not JSON, and the request if it could still be sent
		if req.Seq != 0 {
			lines = append(lines, req.Seq)
		}
		r.res.fail(ruleMethodNotFound, lines, "the request for an unknown method, after the line that is not JSON, was not answered: %v%s", err, r.exitNote())
		r.res.fail(ruleParseError, []int{seq}, "the agent answered nothing after the line that is not JSON")
		return
	case errors.As(err, &rpcErr) && rpcErr.Code == acprpc.CodeMethodNotFound:
		r.res.pass(ruleMethodNotFound)
	default:
		r.res.fail(ruleMethodNotFound, r.linesOf(req), "the request for an unknown method was answered %v, not -32601", orResult(err))
	}
	if _, ok := r.newSession(); ok && seq != 0 && r.res.byID[ruleParseError.ID].Status != Fail {
		r.res.pass(ruleParseError)
	}
}

// parseErrorProbe writes a line that is not JSON and checks its answer; it
// returns the line's number (0 where the transport cannot carry it), and
// whether the run can go on.
func (r *runner) parseErrorProbe() (int, bool) {
	if !r.canWriteNonJSON() {
		r.res.notBrought(ruleParseError, whyHTTPParse)
		return 0, true
	}
	seq, err := r.t.inject(`{this is not JSON`)
	if err != nil {
		r.res.notBrought(ruleParseError, "the line could not be written: %v", err)
		return seq, false
	}
	ctx, cancel := r.bounded(r.o.CancelWait)
	defer cancel()
	ans, ok := r.w.await(ctx, seq+1, func(l Line) bool { return l.Dir == fromAgent && l.msg.isAnswer() && !l.msg.hasID() })
	switch {
	case !ok:
		r.res.fail(ruleParseError, []int{seq}, "the line that is not JSON was not answered within %s", r.o.CancelWait)
	case ans.msg.Error == nil || ans.msg.Error.Code != acprpc.CodeParseError:
		r.res.fail(ruleParseError, []int{seq, ans.Seq}, "the line that is not JSON was answered %s, not -32700", answerText(ans))
	case string(ans.msg.ID) != "null":
		r.res.fail(ruleParseError, []int{seq, ans.Seq}, "the line that is not JSON was answered -32700 with no id member, where JSON-RPC requires \"id\": null when the request's ID could not be read")
	}
	return seq, true
}

// contentUpdates lists the turn updates of session strictly between two
// sequence numbers.
func (r *runner) contentUpdates(session string, after, before int) []int {
	var out []int
	for _, l := range r.w.all() {
		if l.Seq > after && l.Seq < before && l.Dir == fromAgent && l.msg.Method == acpv1.MethodSessionUpdate &&
			l.msg.sessionID() == session && slices.Contains(turnUpdates, l.msg.updateKind()) {
			out = append(out, l.Seq)
		}
	}
	return out
}
