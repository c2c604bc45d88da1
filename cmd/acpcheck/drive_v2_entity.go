package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv2"
)

// entity is a tool call or a terminal of a session, as its updates have
// described it so far.
type entity struct {
	kind        entityKind
	id          string
	advertised  int  // the line of the update that last advertised capabilities.cancel
	cancellable bool // advertised, and not final since
}

// entityKind is what v2 can cancel one of: what a finding calls it, its
// update, the member that names it there and in its cancel, and the request
// that cancels it.
type entityKind struct {
	what, update, idMember, cancel string
}

var entityKinds = []entityKind{
	{"tool call", "tool_call_update", "toolCallId", acpv2.MethodToolCallCancel},
	{"terminal", "terminal_update", "terminalId", acpv2.MethodTerminalCancel},
}

// neverAdvertised is the ID the check cancels to see an unknown entity
// refused.
const neverAdvertised = "acpcheck-never-advertised"

// entityCancelV2 cancels a tool call or terminal that a slow turn's work
// advertises as cancellable: the agent accepts the cancel, confirms it with
// the entity's final update, and refuses with -32602 a second cancel of the
// now final entity and a cancel of an ID it never advertised. The work is
// then ended with session/cancel, which the other scenarios check.
func (r *runner) entityCancelV2() {
	session, p, underway, ok := r.slowTurn(r.underwayV2)
	if !ok {
		return
	}
	defer r.hold.Store(false)
	if !underway {
		r.res.notBrought(ruleV2Entity, "the slow prompt's work ended before anything of it could be cancelled")
		return
	}
	defer r.endWorkV2(session, p)
	e, ok := r.awaitCancellable(session, p.req.Seq)
	if !ok {
		r.res.notBrought(ruleV2Entity, "no tool call or terminal of the slow prompt's work advertised capabilities.cancel")
		return
	}
	name := fmt.Sprintf("%s %q", e.kind.what, e.id)
	req, err := r.cancelEntity(session, e.kind, e.id)
	if err != nil {
		r.res.fail(ruleV2Entity, []int{e.advertised, req.Seq}, "%s advertised capabilities.cancel, and its %s failed: %v", name, e.kind.cancel, err)
		return
	}
	final, ok := r.awaitFinal(session, e, req.Seq)
	if !ok {
		r.res.fail(ruleV2Entity, []int{e.advertised, req.Seq}, "the %s of %s was accepted, and no %s with a final status followed within %s", e.kind.cancel, name, e.kind.update, r.o.CancelWait)
		return
	}
	for _, probe := range []struct{ id, what string }{{e.id, "the final " + name}, {neverAdvertised, "an ID never advertised"}} {
		again, err := r.cancelEntity(session, e.kind, probe.id)
		if rpcErr := (*acprpc.Error)(nil); !errors.As(err, &rpcErr) || rpcErr.Code != acprpc.CodeInvalidParams {
			r.res.fail(ruleV2Entity, []int{final.Seq, again.Seq}, "a %s of %s was answered %s, where the spec says -32602", e.kind.cancel, probe.what, orResult(err))
			return
		}
	}
	r.res.pass(ruleV2Entity)
}

// awaitCancellable returns the first tool call or terminal of session that
// advertises capabilities.cancel, waiting up to CancelAfter for one: the
// work may advertise it a moment after it was judged under way.
func (r *runner) awaitCancellable(session string, from int) (entity, bool) {
	ctx, cancel := r.bounded(r.o.CancelAfter)
	defer cancel()
	for mark := from; ; {
		if e, ok := r.cancellableEntity(session, from); ok {
			return e, true
		}
		l, ok := r.w.await(ctx, mark+1, func(l Line) bool {
			_, u, ok := entityUpdate(l, session)
			return ok && advertisesCancel(u["capabilities"])
		})
		if !ok {
			return entity{}, false
		}
		mark = l.Seq
	}
}

// cancellableEntity returns the first tool call or terminal of session,
// from a line on, that advertises capabilities.cancel and is not final.
func (r *runner) cancellableEntity(session string, from int) (entity, bool) {
	var seen []*entity
	find := func(k entityKind, id string) *entity {
		for _, e := range seen {
			if e.kind == k && e.id == id {
				return e
			}
		}
		e := &entity{kind: k, id: id}
		seen = append(seen, e)
		return e
	}
	for _, l := range r.w.all()[from:] {
		k, u, ok := entityUpdate(l, session)
		if !ok {
			continue
		}
		e := find(k, stringOf(u[k.idMember]))
		if caps, ok := u["capabilities"]; ok {
			e.cancellable = advertisesCancel(caps)
			e.advertised = l.Seq
		}
		if isFinal(k, u) {
			e.cancellable = false
		}
	}
	for _, e := range seen {
		if e.cancellable {
			return *e, true
		}
	}
	return entity{}, false
}

// entityUpdate returns the kind and members of a line that is a tool call's
// or a terminal's update in session.
func entityUpdate(l Line, session string) (entityKind, map[string]json.RawMessage, bool) {
	if l.Dir != fromAgent || l.msg.Method != acpv2.MethodSessionUpdate || l.msg.sessionID() != session {
		return entityKind{}, nil, false
	}
	kind := l.msg.updateKind()
	for _, k := range entityKinds {
		if k.update == kind {
			return k, l.msg.updateMembers(), true
		}
	}
	return entityKind{}, nil, false
}

// advertisesCancel reports whether a capabilities value permits a cancel:
// an object whose cancel is an object. Anything else, malformed included,
// means no controls, as the schema says.
func advertisesCancel(caps json.RawMessage) bool {
	var c struct {
		Cancel json.RawMessage `json:"cancel"`
	}
	return json.Unmarshal(caps, &c) == nil && len(c.Cancel) > 0 && c.Cancel[0] == '{'
}

// isFinal reports whether an update leaves its entity final: a tool call
// completed, failed or cancelled; a terminal with an exitStatus.
func isFinal(k entityKind, u map[string]json.RawMessage) bool {
	if k.update == "terminal_update" {
		status, ok := u["exitStatus"]
		return ok && string(status) != "null"
	}
	switch stringOf(u["status"]) {
	case string(acpv2.ToolCallStatusCompleted), string(acpv2.ToolCallStatusFailed), string(acpv2.ToolCallStatusCancelled):
		return true
	}
	return false
}

func stringOf(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// cancelEntity sends kind's cancel for id in session and returns its line
// and the call's error.
func (r *runner) cancelEntity(session string, k entityKind, id string) (Line, error) {
	ctx, cancel := r.bounded(r.o.CancelWait)
	defer cancel()
	mark := r.w.next()
	err := r.conn.Call(ctx, k.cancel, map[string]string{"sessionId": session, k.idMember: id}, nil)
	req, _ := r.w.await(ctx, mark, sent(k.cancel))
	return req, err
}

// awaitFinal waits up to CancelWait for e's final update after a line.
func (r *runner) awaitFinal(session string, e entity, after int) (Line, bool) {
	ctx, cancel := r.bounded(r.o.CancelWait)
	defer cancel()
	return r.w.await(ctx, after+1, func(l Line) bool {
		k, u, ok := entityUpdate(l, session)
		return ok && k == e.kind && stringOf(u[k.idMember]) == e.id && isFinal(k, u)
	})
}

// endWorkV2 ends a slow turn's work with session/cancel and waits for its
// idle state_update, so that it does not run into the next scenario.
func (r *runner) endWorkV2(session string, p prompt) {
	r.hold.Store(false)
	if len(r.idles(session, p.req.Seq)) > 0 {
		return
	}
	_ = acprpc.CancelSession(context.WithoutCancel(r.ctx), r.conn, session)
	r.awaitIdle(session, p.req.Seq, r.o.CancelWait)
}
