package acprpc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/acpkit/acprpc/internal/wire"
)

// acpRules is ACP in a Conn: the protocol's state (its version, v2's works
// and entities) and the one hand-off through which the engine, which knows
// no protocol, lets ACP act. The Conn holds it as a value and calls its
// methods directly, never through an interface, so the hot path pays no
// dynamic call; docs/design.md ("The engine and the protocol") lists the
// points where the engine calls it.
type acpRules struct {
	conn       *Conn
	versions   versioning  // the ACP version and its rules
	foreground workTable   // v2: each session's foreground work
	entities   entityTable // v2: tool calls and terminals the peer may cancel
	// promptWarned: a session/prompt called before initialize was logged.
	promptWarned atomic.Bool
}

// acpRequest is what ACP keeps of a request in flight.
type acpRequest struct {
	work    *Work   // v2: a prompt's foreground work; set before the handler starts, then under the request's mu
	closing closing // a session/close: what it cancelled, whose ends its answer waits for; set before the handler starts
}

// acpCall is what ACP follows of one of this side's calls.
type acpCall struct {
	turn  *turnWatch      // a prompt turn (acp_turn.go): &watch, or nil
	watch turnWatch       // the turn, kept in the call's own allocation
	asked ProtocolVersion // the version an initialize call asked for, 0 for any other call
}

func (a *acpRules) init(c *Conn, h Handler) {
	a.conn = c
	a.versions.init(&c.opts, h)
	c.reader = acpReader()
}

// acpReader reads messages as ACP does: a request's scope is its session
// (params.sessionId), through which a session cancel finds the session's
// requests, and ACP's method names are shared.
func acpReader() wire.Reader {
	return wire.Reader{Scope: "sessionId", Names: acpMethodNames}
}

// acpNeeds is what ACP's rules ask of a request's entry once the tracker
// has registered it, before its handler starts.
type acpNeeds struct {
	joinsWork bool // a v2 prompt: it joins its session's foreground work
	closing   closing
}

// closing is what a session/close request cancelled, whose ends its answer
// waits for: the session's requests in flight (every version) and its
// foreground works (v2).
type closing struct {
	requests []*inRequest
	works    []*Work
}

// read applies ACP's rules to a request or notification just read:
// $/cancel_request, negotiation of initialize, session/cancel and
// session/close, v2's entity cancels, and what a v2 prompt or session/close
// needs once registered. It reports whether m is used up (answered here, or
// a cancel); a session cancellation goes on to the application's handler
// too.
func (a *acpRules) read(m *message) (needs acpNeeds, used bool) {
	c := a.conn
	if m.Kind == wire.Notification {
		switch {
		case c.isCancelRequest(m.Method):
			c.onCancelRequest(m)
			return needs, true
		case c.isSessionCancel(m.Method):
			c.onSessionCancel(m.Scope)
		}
		return needs, false
	}
	switch p := c.protocol(); {
	case m.Method == methodInitialize:
		a.versions.initialized.Store(true)
		return needs, c.negotiate(m)
	case needsInitialize(m.Method) && !a.initialized():
		// ACP orders the client, not the agent: a client that skipped
		// initialize is served, and its mistake is logged.
		if msg, ok := c.peerWarned.beforeInitialize.due("acprpc: the client sent a session method before initialize, which ACP requires first"); ok {
			c.log.Warn(msg, "method", m.Method, "id", firstBytes(m.ID, peerTextShown))
		}
	case p.entityCancels && (m.Method == methodToolCallCancel || m.Method == methodTerminalCancel):
		return needs, c.onEntityCancel(m)
	case c.isSessionCancel(m.Method) && !handlerServes(c.handler, c, m.Method):
		// A session/close the application does not serve is answered
		// -32601, and so cancels nothing: a client told that the agent
		// cannot close sessions knows that the session and its turn go on,
		// and can cancel the turn with session/cancel.
	case c.isSessionCancel(m.Method):
		// A request of the session's cancel methods (session/close, a
		// request in v1's schema as in v2's) cancels as the notification
		// does, before it is served.
		needs.closing.requests = c.onSessionCancel(m.Scope)
		if p.foreground && m.Scope != "" {
			needs.closing.works = a.foreground.unended(m.Scope)
		}
	case p.foreground && m.Method == methodSessionPrompt && m.Scope != "":
		needs.joinsWork = true
	case strings.HasPrefix(m.Method, "$/"):
		// The protocol's own methods are notifications: a request of one is
		// answered -32601, whatever the handler serves.
		c.refuse(m, MethodNotFound(m.Method))
		return needs, true
	}
	return needs, false
}

// protocol returns the rules in force.
func (c *Conn) protocol() *protocol { return c.acp.versions.current.Load() }

// isSessionCancel reports whether a request or notification of method cancels its
// session (Options.SessionCancelMethods).
func (c *Conn) isSessionCancel(method string) bool {
	return slices.Contains(c.opts.SessionCancelMethods, method)
}

// registered gives a request what read asked for, once the tracker has
// registered it and before its handler starts.
func (a *acpRules) registered(r *inRequest, needs acpNeeds) {
	r.acp.closing = needs.closing
	if needs.joinsWork { // it joins the session's work in progress, or a new one
		w := a.foreground.current(a.conn, r.req.SessionID)
		w.mu.Lock()
		w.prompts++
		w.mu.Unlock()
		r.acp.work = w
	}
}

// isCancelRequest reports whether a notification is $/cancel_request, or
// LSP's $/cancelRequest when Options.AcceptLSPCancel allows it.
func (c *Conn) isCancelRequest(method string) bool {
	return method == MethodCancelRequest || method == MethodLSPCancelRequest && c.opts.AcceptLSPCancel
}

// onCancelRequest handles $/cancel_request (and, when allowed,
// $/cancelRequest), whose params name the request by requestId (id).
func (c *Conn) onCancelRequest(m *message) {
	field := "requestId"
	if m.Method == MethodLSPCancelRequest {
		field = "id"
	}
	c.peerCancelled(m, wire.Member(m.Params, field))
}

// cancelCall tells the peer that this side's call id is no longer wanted,
// its context having ended or Shutdown having begun, and says which cancel
// it was: a prompt turn is cancelled as ACP prescribes, with session/cancel
// sent here, and its wait for the answer set (acp_turn.go); any other call
// gets the $/cancel_request frame returned, for the engine to send.
func (a *acpRules) cancelCall(ctx context.Context, pc *pendingCall, id int64, co *callOptions) (f *frame, how string) {
	if how, ok := a.conn.cancelTurn(ctx, pc, co); ok {
		return nil, how
	}
	if pc.acp.turn != nil {
		pc.acp.turn.markCancelled()
	}
	f = getFrame()
	f.info = frameInfo{kind: KindNotification, method: MethodCancelRequest, generated: true, ctx: ctx}
	f.Begin(nil)
	f.Buf.WriteString(`,"method":"$/cancel_request","params":{"requestId":`)
	f.Buf.Write(strconv.AppendInt(f.Buf.AvailableBuffer(), id, 10))
	f.Buf.WriteString("}}")
	return f, MethodCancelRequest + " for request " + strconv.FormatInt(id, 10)
}

// closing tells the agent, as Close begins, that the turns of this side's
// prompt calls in flight are cancelled: session/cancel for each of their
// sessions, queued for the close to flush ahead of the transport's end.
func (a *acpRules) closing() {
	c := a.conn
	if c.Err() != nil {
		return
	}
	for _, sessionID := range c.turnsInFlight() {
		_ = c.Notify(context.Background(), methodSessionCancel, sessionParams{SessionID: sessionID})
	}
}

// mayCall refuses a call ACP forbids at this point of the connection: a
// method that opens or lists sessions before this side has had an
// initialize answered, since ACP requires the client to initialize first,
// and an agent would refuse it, or serve it without knowing the client's
// capabilities. A session/prompt then is the same mistake, and is warned
// about, once per connection, rather than refused: it names a session,
// which may have been opened outside this connection. A connection whose
// version was set outside (Options.PinnedVersion, SetProtocolVersion)
// counts as initialized.
func (a *acpRules) mayCall(method string) error {
	switch {
	case needsInitialize(method) && !a.initialized():
		return fmt.Errorf("not sent: ACP requires initialize before %s, and this connection has had none: "+
			"call initialize first (acpv1.ToAgent.Initialize.Call, or acpv2's), and wait for its answer", method)
	case method == methodSessionPrompt && !a.initialized() && a.promptWarned.CompareAndSwap(false, true):
		a.conn.log.Warn("acprpc: session/prompt is called before initialize, which ACP requires first: "+
			"an agent refuses it, or serves it without knowing the client's capabilities; "+
			"call initialize first (acpv1.ToAgent.Initialize.Call, or acpv2's), and wait for its answer. "+
			"It is sent, since its session may have been opened outside this connection; logged once per connection",
			"method", method)
	}
	return nil
}

// needsInitialize reports whether method is one that ACP allows only once
// the connection is initialized and that cannot name a session opened
// after that: the methods that open or list sessions. The others (a
// prompt, a cancel) name a session one of these opened.
func needsInitialize(method string) bool {
	switch method {
	case methodSessionNew, methodSessionLoad, methodSessionResume, methodSessionFork, methodSessionList:
		return true
	}
	return false
}

// initialized reports whether the connection has had its initialize: an
// answer to this side's, the peer's read, or a version set outside it.
func (a *acpRules) initialized() bool {
	return a.versions.initialized.Load() || a.conn.ProtocolVersion() != 0
}

// callSent starts following a call ACP reads the answer of, or cancels its
// own way: a prompt turn, which goes out only once the agent has answered
// its session's turn this side cancelled earlier, so that nothing of that
// turn can be taken for the new one's. f is the call's request. An error
// says why the call is not sent.
func (a *acpRules) callSent(ctx context.Context, pc *pendingCall, f *frame) error {
	if a.conn.watchTurn(pc, f) {
		// The writer marks the turn sent as it queues the prompt, under
		// the lock that orders a session/cancel queued after it.
		f.queued = &pc.acp.turn.sent
	}
	a.versions.asking(pc, f)
	return a.conn.awaitCancelledTurns(ctx, pc)
}

// callAnswered sees the result of one of this side's calls on the read
// goroutine, before the next message is read, and returns the result its
// caller gets: an initialize result sets the version, and a watched prompt
// turn that this side cancelled is reported cancelled.
func (a *acpRules) callAnswered(pc *pendingCall, result []byte) []byte {
	if pc.method == methodInitialize {
		a.versions.initialized.Store(true)
		a.conn.learnVersion(result)
		a.versions.answered(pc, result)
	}
	return pc.turnResult(result)
}

// callFailed returns why a call failed as its caller gets it: err, and on a
// connection whose agent answered initialize with an older version than
// this side asked for, what a result that does not decode or an invalid
// params answer most likely means.
func (a *acpRules) callFailed(err error) error {
	return a.versions.explain(err)
}

// notifying sends a notification that belongs to a v2 work, ordered with,
// and dropped after, the work's ending; it reports false for any other,
// which the engine sends.
func (a *acpRules) notifying(ctx context.Context, method string, f *frame) (sent bool, err error) {
	if method != methodSessionUpdate || !a.conn.protocol().foreground {
		return false, nil
	}
	w, _ := ctx.Value(workKey).(*Work)
	if w == nil || w.conn != a.conn {
		return false, nil
	}
	return true, w.sendUpdate(f)
}

// marker returns the result that answers a cancelled request of method in
// the version in force, if it has one.
func (a *acpRules) marker(method string) (json.RawMessage, bool) {
	m, ok := a.conn.protocol().markers[method]
	return m, ok
}

// shutdown cancels every v2 work as Shutdown begins.
func (a *acpRules) shutdown() {
	for _, w := range a.foreground.inProgress() {
		w.cancelWith(ErrShutdown)
	}
}

// quiet returns once every v2 work has ended, each waited for with wait.
// Work can be begun while the rest winds down (BeginWork); it is cancelled
// as soon as it is seen.
func (a *acpRules) quiet(wait func(<-chan struct{}) error) error {
	for works := a.foreground.inProgress(); len(works) > 0; works = a.foreground.inProgress() {
		for _, w := range works {
			w.cancelWith(ErrShutdown)
			if err := wait(w.done); err != nil {
				return err
			}
		}
	}
	return nil
}

// beforeAnswer sees each answer just before it is sent: the version can
// come from an initialize result, and a v2 prompt answered with a result has
// been inserted, which starts its work.
func (a *acpRules) beforeAnswer(r *inRequest, f *frame) {
	switch r.req.Method {
	case methodInitialize:
		if f.info.kind == KindResult {
			a.conn.learnVersion(wire.Member(f.Buf.Bytes(), "result"))
		}
	case methodSessionPrompt:
		r.mu.Lock()
		w := r.acp.work
		r.mu.Unlock()
		switch {
		case w == nil:
		case f.info.kind == KindResult:
			w.start()
		default:
			w.promptRejected()
		}
	}
}

// holdAnswer keeps a session/close's answer until every request it
// cancelled has been answered, and, in v2, every foreground work it
// cancelled has ended, the one in progress and those still winding down
// from an earlier cancel, so their idle state_updates go out first, as v2
// requires; the grace period bounds the wait.
func (a *acpRules) holdAnswer(r *inRequest) {
	for _, q := range r.acp.closing.requests {
		q.waitSent()
	}
	for _, w := range r.acp.closing.works {
		select {
		case <-w.done:
		case <-w.conn.closed:
		}
	}
}

// errorAnswer adjusts an error answer to the version: a v2 entity cancel
// that the application does not serve is answered -32602, as for an entity
// that is unknown, final or not cancellable.
func (a *acpRules) errorAnswer(r *inRequest, e *Error) *Error {
	if e.Code == CodeMethodNotFound && a.conn.protocol().entityCancels &&
		(r.req.Method == methodToolCallCancel || r.req.Method == methodTerminalCancel) {
		return unknownEntity(r.req.Method)
	}
	return e
}
