package acprpc

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc/internal/wire"
)

// inRequest is an incoming request in flight, from its registration on the
// read goroutine to its one answer. It is also the handler's context, so
// the accessors and the cancellation state cost no allocations beyond the
// entry itself.
type inRequest struct {
	context.Context
	cancel   context.CancelCauseFunc
	conn     *Conn
	req      Request
	rawID    []byte
	key      wire.Key
	size     int         // the message's bytes, held until the handler returns
	answered atomic.Bool // set once, by the one answer
	// atInputEnd: answered cancelled for its handler once InputEndGrace ran
	// out (Conn.inputEndRanOut), not CancelGrace.
	atInputEnd atomic.Bool
	acp        acpRequest // what the protocol keeps of the request (acp_rules.go)
	// sent is set once the one answer is queued for the writer; watched
	// once someone waits for that (waitSent), which onSent then tells.
	sent, watched atomic.Bool
	// The requests in flight of the same scope (Message.Scope), linked
	// under the table's lock (incomingTable.scopes).
	scopePrev, scopeNext *inRequest
	// handlerCtx is the context the handler gets and its answer is sent
	// under: the entry itself, or what Options.HandlerContext made of it.
	// Set on the read goroutine before the entry is added to the table.
	handlerCtx context.Context

	mu       sync.Mutex  // protects the fields below
	cause    error       // the first cancellation cause, recorded as it arrived
	decided  error       // the cause a cancel under way gives, whichever cancel lands first
	grace    *time.Timer // answers for a handler that outlives its grace period
	cancelAt time.Time   // when the first cancel arrived, to say how long a handler overran it
	deadline *time.Timer
	onSent   signal // fired once sent is set, if watched
}

// waitSent returns once the request's answer is queued for the writer, so
// that an answer queued after it goes out after it, or once the connection
// has closed.
func (r *inRequest) waitSent() {
	r.mu.Lock()
	r.watched.Store(true)
	if r.sent.Load() {
		r.mu.Unlock()
		return
	}
	ch := r.onSent.wait()
	r.mu.Unlock()
	select {
	case <-ch:
	case <-r.conn.closed:
	}
}

// markSent records that the answer is queued and wakes the one
// waiting for it. Only a watched request takes the lock: sent is stored
// before watched is read, and watched before sent, so one side sees the
// other.
func (r *inRequest) markSent() {
	r.sent.Store(true)
	if r.watched.Load() {
		r.mu.Lock()
		r.onSent.fire()
		r.mu.Unlock()
	}
}

// errRequestDone ends a request's context once it is answered, like
// net/http ends a request's context when ServeHTTP returns.
var errRequestDone = errors.New("acprpc: request answered")

func (c *Conn) newInRequest(m *message) *inRequest {
	key, _ := wire.KeyOf(m.ID) // the parse accepted the ID: wire.KeyOf is the one rule for when two are the same
	r := &inRequest{conn: c, rawID: m.ID, key: key, size: m.Size}
	r.req = Request{ID: ID{raw: string(m.ID)}, Method: m.Method, Params: m.Params, SessionID: m.Scope, read: m.Params}
	r.Context, r.cancel = context.WithCancelCause(c.base)
	r.handlerCtx = c.handlerContext(r, &r.req, inRequestKey)
	return r
}

// scope is the request's Message.Scope, which Request carries as SessionID.
func (r *inRequest) scope() string { return r.req.SessionID }

func (r *inRequest) Value(key any) any {
	switch key {
	case requestKey:
		return &r.req
	case connKey:
		return r.conn
	case inRequestKey:
		return r
	}
	return r.Context.Value(key)
}

// armDeadline cancels the request with ErrDeadline once d has passed, if d
// is positive.
func (r *inRequest) armDeadline(d time.Duration) {
	if d <= 0 {
		return
	}
	r.mu.Lock()
	r.deadline = time.AfterFunc(d, func() { r.cancelWith(ErrDeadline) })
	r.mu.Unlock()
}

// cancelWith cancels the request for cause. The first cause is kept, and
// from then on the request is owed its cancelled answer: by the handler's
// return, or by the grace timer if the handler does not return in time. It
// reports whether this call cancelled the request.
func (r *inRequest) cancelWith(cause error) bool {
	r.mu.Lock()
	if r.cause != nil || r.answered.Load() {
		r.mu.Unlock()
		return false
	}
	if r.decided != nil {
		cause = r.decided
	}
	r.cause = cause
	r.cancelAt = time.Now()
	r.grace = r.conn.afterGrace(func() { r.conn.graceRanOut(r) })
	r.mu.Unlock()
	r.cancel(cause)
	return true
}

// sinceCancel is how long ago the request was cancelled.
func (r *inRequest) sinceCancel() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Since(r.cancelAt).Round(time.Millisecond)
}

// decide fixes the cause of a cancel that is under way but not yet made, so
// that another cancel landing in between gives the same cause.
func (r *inRequest) decide(cause error) {
	r.mu.Lock()
	r.decided = cause
	r.mu.Unlock()
}

// afterGrace runs f once Options.CancelGrace has passed since a cancel, and
// returns its timer: the grace period of a request or a work. It returns nil
// when there is none (a negative CancelGrace waits for the application) or
// the connection has closed, which ends everything at once.
func (c *Conn) afterGrace(f func()) *time.Timer {
	if c.opts.CancelGrace <= 0 || c.Err() != nil {
		return nil
	}
	return time.AfterFunc(c.opts.CancelGrace, f)
}

// cancelledBy returns why the request was cancelled, or nil if it was not.
// The cause recorded when the cancellation arrived decides; a context ended
// by the connection closing has no record and is read from the context,
// which only this library can cancel.
func (r *inRequest) cancelledBy() error {
	r.mu.Lock()
	cause := r.cause
	r.mu.Unlock()
	if cause == nil && r.Err() != nil {
		cause = context.Cause(r.Context)
	}
	return cause
}

// stopTimers disarms the timers that would act on the request later.
func (r *inRequest) stopTimers() {
	r.mu.Lock()
	for _, t := range []*time.Timer{r.grace, r.deadline} {
		if t != nil {
			t.Stop()
		}
	}
	r.mu.Unlock()
}

// incomingTable is the in-flight table of the peer's requests, keyed by
// exact ID. A request is added on the read goroutine before its handler
// starts, so a cancel read right after it always finds it.
type incomingTable struct {
	mu sync.Mutex // protects the fields below
	m  map[wire.Key]*inRequest
	// scopes holds, for each scope with requests in flight, the last added
	// of them, linked to the others through scopePrev and scopeNext: the
	// protocol cancels a scope's requests (an ACP session's) without
	// walking every request in flight (1,000 scopes cancelled at once cost
	// a million steps that way), and the links cost no allocation.
	scopes   map[string]*inRequest
	draining bool   // Shutdown has begun: no request is added any more
	open     int    // requests added whose answer is not queued yet
	empty    signal // fired when open drops to 0

	// held is the bytes of the messages that running handlers hold. Only
	// the read goroutine adds to it, so its check and its add need no lock.
	held atomic.Int64
}

// add registers r, or reports false when its ID is already in flight or
// the table is draining.
func (t *incomingTable) add(r *inRequest) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.draining {
		return false
	}
	if t.m == nil {
		t.m = make(map[wire.Key]*inRequest)
	}
	if _, busy := t.m[r.key]; busy {
		return false
	}
	t.m[r.key] = r
	if sid := r.scope(); sid != "" {
		if t.scopes == nil {
			t.scopes = make(map[string]*inRequest)
		}
		if last := t.scopes[sid]; last != nil {
			r.scopePrev, last.scopeNext = last, r
		}
		t.scopes[sid] = r
	}
	t.open++
	t.held.Add(int64(r.size))
	return true
}

func (t *incomingTable) get(k wire.Key) *inRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[k]
}

// remove drops r, and only r: a new request may already use the same ID.
func (t *incomingTable) remove(r *inRequest) {
	t.mu.Lock()
	if t.m[r.key] == r {
		delete(t.m, r.key)
		t.unlinkScope(r)
	}
	t.mu.Unlock()
}

// unlinkScope takes r out of its scope's list; t.mu is held.
func (t *incomingTable) unlinkScope(r *inRequest) {
	sid := r.scope()
	if sid == "" {
		return
	}
	if r.scopeNext != nil {
		r.scopeNext.scopePrev = r.scopePrev
	} else if r.scopePrev != nil {
		t.scopes[sid] = r.scopePrev
	} else {
		delete(t.scopes, sid)
	}
	if r.scopePrev != nil {
		r.scopePrev.scopeNext = r.scopeNext
	}
	r.scopePrev, r.scopeNext = nil, nil
}

// queued records that an answer removed from the table is queued: once
// every one is, emptied's channel closes.
func (t *incomingTable) queued() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open--
	if t.open == 0 {
		t.empty.fire()
	}
}

// drain stops the table taking requests and returns those in flight: after
// it, the table only shrinks.
func (t *incomingTable) drain() []*inRequest {
	t.mu.Lock()
	t.draining = true
	t.mu.Unlock()
	return t.all()
}

func (t *incomingTable) isDraining() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.draining
}

// emptied returns a channel closed once no request is in flight and every
// answer is queued.
func (t *incomingTable) emptied() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open == 0 {
		return closedChan
	}
	return t.empty.wait()
}

// all returns every request in flight. The table's lock is released
// before the caller acts on them.
func (t *incomingTable) all() []*inRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Collect(maps.Values(t.m))
}

// inScope returns the requests in flight of the scope,
// oldest first. The table's lock is released before the caller acts on
// them.
func (t *incomingTable) inScope(scope string) []*inRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := t.scopes[scope]
	if last == nil {
		return nil
	}
	first, n := last, 1
	for ; first.scopePrev != nil; first = first.scopePrev {
		n++
	}
	out := make([]*inRequest, 0, n)
	for r := first; r != nil; r = r.scopeNext {
		out = append(out, r)
	}
	return out
}

func (t *incomingTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
