package acprpc

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// inRequest is an incoming request in flight. It is also the handler's
// context, so the accessors and the cancellation state cost no allocations
// beyond the entry itself.
type inRequest struct {
	context.Context
	cancel   context.CancelCauseFunc
	conn     *Conn
	req      Request
	rawID    []byte
	key      idKey
	answered atomic.Bool

	mu       sync.Mutex
	cause    error       // the first cancellation cause, recorded as it arrived
	grace    *time.Timer // answers for a handler that outlives its grace period
	deadline *time.Timer
}

func (r *inRequest) Value(key any) any {
	switch key {
	case requestKey:
		return &r.req
	case connKey:
		return r.conn
	}
	return r.Context.Value(key)
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

// tracker is the in-flight table of incoming requests, keyed by exact ID.
// A request is added on the read goroutine before its handler starts, so a
// $/cancel_request read right after it always finds it.
type tracker struct {
	mu sync.Mutex
	m  map[idKey]*inRequest
}

// add registers r, or reports false when its ID is already in flight.
func (t *tracker) add(r *inRequest) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[idKey]*inRequest)
	}
	if _, busy := t.m[r.key]; busy {
		return false
	}
	t.m[r.key] = r
	return true
}

func (t *tracker) get(k idKey) *inRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[k]
}

// remove drops r, and only r: a new request may already use the same ID.
func (t *tracker) remove(r *inRequest) {
	t.mu.Lock()
	if t.m[r.key] == r {
		delete(t.m, r.key)
	}
	t.mu.Unlock()
}

// matching returns the requests in flight for which keep is true.
func (t *tracker) matching(keep func(*inRequest) bool) []*inRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*inRequest
	for _, r := range t.m {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func (t *tracker) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
