package acprpc

import "github.com/acpkit/acprpc/internal/wire"

// ACP's rules on the read path, in one place: the router calls acpRules
// once for every request and notification that is neither an answer nor a
// $/cancel_request, on the read goroutine, before anything else is read.
// The version's rules (protocol) decide which apply. The answer path has
// its own few rules below, each called from one place of serve.go.

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

// acpRules applies ACP's rules to a request or notification just read:
// negotiation of initialize, session/cancel and session/close, v2's entity
// cancels, and what a v2 prompt or session/close needs once registered. It
// reports whether m is used up (answered here); a session cancellation goes
// on to the application's handler too.
func (c *Conn) acpRules(m *message) (needs acpNeeds, used bool) {
	if m.Kind == wire.Notification {
		if c.isSessionCancel(m.Method) {
			c.onSessionCancel(m.SessionID)
		}
		return needs, false
	}
	switch p := c.protocol(); {
	case m.Method == methodInitialize:
		return needs, c.negotiate(m)
	case p.entityCancels && (m.Method == methodToolCallCancel || m.Method == methodTerminalCancel):
		return needs, c.onEntityCancel(m)
	case c.isSessionCancel(m.Method):
		// A request of the session's cancel methods (session/close, a
		// request in v1's schema as in v2's) cancels as the notification
		// does, before it is served.
		needs.closing.requests = c.onSessionCancel(m.SessionID)
		if p.foreground && m.SessionID != "" {
			needs.closing.works = c.foreground.unended(m.SessionID)
		}
	case p.foreground && m.Method == methodSessionPrompt && m.SessionID != "":
		needs.joinsWork = true
	}
	return needs, false
}

// acpBeforeAnswer sees each answer just before it is sent: the version can
// come from an initialize result, and a v2 prompt answered with a result has
// been inserted, which starts its work.
func (c *Conn) acpBeforeAnswer(r *inRequest, f *frame) {
	switch r.req.Method {
	case methodInitialize:
		if f.info.kind == KindResult {
			c.learnVersion(wire.Member(f.Buf.Bytes(), "result"))
		}
	case methodSessionPrompt:
		w := r.promptWork()
		switch {
		case w == nil:
		case f.info.kind == KindResult:
			w.start()
		default:
			w.promptRejected()
		}
	}
}

// acpHoldAnswer keeps a session/close's answer until every request it
// cancelled has been answered, and, in v2, every foreground work it
// cancelled has ended, the one in progress and those still winding down
// from an earlier cancel, so their idle state_updates go out first, as v2
// requires; the grace period bounds the wait.
func (c *Conn) acpHoldAnswer(r *inRequest) {
	for _, q := range r.closing.requests {
		q.waitSent()
	}
	for _, w := range r.closing.works {
		w.wait()
	}
}

// errorForVersion adjusts an error answer to the version: a v2 entity cancel
// that the application does not serve is answered -32602, as for an entity
// that is unknown, final or not cancellable.
func (c *Conn) errorForVersion(r *inRequest, e *Error) *Error {
	if e.Code == CodeMethodNotFound && c.protocol().entityCancels &&
		(r.req.Method == methodToolCallCancel || r.req.Method == methodTerminalCancel) {
		return unknownEntity(r.req.Method)
	}
	return e
}
