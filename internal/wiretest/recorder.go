package wiretest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/acpkit/acprpc"
)

// Recorder records what a Conn's handlers went through: each handler's
// context, by the request's ID (as JSON text; a notification's by its
// method), the order in which they started and returned, and how many are
// running; and, through Logger, what the Conn logs. The zero Recorder is
// ready to use.
type Recorder struct {
	// OnlyCount, set before the first Track, keeps only the count of
	// running handlers, for a soak of millions of requests.
	OnlyCount bool

	mu       sync.Mutex
	ctxs     map[string]context.Context
	starts   []string
	returns  []handlerReturn
	running  int     // handlers tracked and not yet returned
	changed  changes // woken at every start and return
	nextSeen [2]int  // how far NextStart and NextReturn have read
	logged   []Record
}

// handlerReturn is a handler's return: its key and its context's cause
// then (nil if the context had not ended).
type handlerReturn struct {
	key   string
	cause error
}

// requestKey is what a Recorder files a request under: its ID's JSON text, or a
// notification's method.
func requestKey(req *acprpc.Request) string {
	if req.IsNotification() {
		return req.Method
	}
	return req.ID.String()
}

// Track returns h recorded by the Recorder.
func (r *Recorder) Track(h acprpc.HandlerFunc) acprpc.HandlerFunc {
	return func(ctx context.Context, req *acprpc.Request) (any, error) {
		if r.OnlyCount {
			r.note(func() { r.running++ })
			defer r.note(func() { r.running-- })
			return h(ctx, req)
		}
		key := requestKey(req)
		r.note(func() {
			r.running++
			if r.ctxs == nil {
				r.ctxs = map[string]context.Context{}
			}
			r.ctxs[key] = ctx
			r.starts = append(r.starts, key)
		})
		defer r.note(func() {
			r.returns = append(r.returns, handlerReturn{key, context.Cause(ctx)})
			r.running--
		})
		return h(ctx, req)
	}
}

// Running returns how many tracked handlers are running.
func (r *Recorder) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// AwaitIdle waits until no tracked handler is running; if ctx ends first
// it returns ctx's error, with every goroutine's stack.
func (r *Recorder) AwaitIdle(ctx context.Context) error {
	return r.await(ctx, func() bool { return r.running == 0 })
}

// Block is a recorded handler that waits for its context to end and
// returns the cause.
func (r *Recorder) Block(ctx context.Context, req *acprpc.Request) (any, error) {
	return r.Track(Hold(nil))(ctx, req)
}

func (r *Recorder) note(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
	r.changed.wake()
}

// await waits until cond, called under the lock, holds.
func (r *Recorder) await(ctx context.Context, cond func() bool) error {
	for {
		r.mu.Lock()
		if cond() {
			r.mu.Unlock()
			return nil
		}
		changed := r.changed.next()
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return stalled(ctx)
		}
	}
}

// NextStart waits for the next handler to start, in the order they
// started, and returns its key; it fails the test if ctx ends first.
func (r *Recorder) NextStart(t testing.TB, ctx context.Context) string {
	t.Helper()
	key, err := nextOf(r, ctx, &r.starts, &r.nextSeen[0])
	if err != nil {
		t.Fatalf("wiretest: waiting for a handler to start: %v (started: %v)", err, r.Starts())
	}
	return key
}

// NextReturn waits for the next handler to return, in the order they
// returned, and returns its key and its context's cause then (nil if the
// context had not ended); it fails the test if ctx ends first.
func (r *Recorder) NextReturn(t testing.TB, ctx context.Context) (key string, cause error) {
	t.Helper()
	ret, err := nextOf(r, ctx, &r.returns, &r.nextSeen[1])
	if err != nil {
		t.Fatalf("wiretest: waiting for a handler to return: %v (returned: %v)", err, r.Returns())
	}
	return ret.key, ret.cause
}

// nextOf waits for the entry of list after the *seen already read, and
// moves *seen past it.
func nextOf[T any](r *Recorder, ctx context.Context, list *[]T, seen *int) (T, error) {
	var next T
	err := r.await(ctx, func() bool {
		if *seen < len(*list) {
			next = (*list)[*seen]
			*seen++
			return true
		}
		return false
	})
	return next, err
}

// Starts returns the keys of the handlers started so far, in order.
func (r *Recorder) Starts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.starts...)
}

// Returns returns the keys of the handlers returned so far, in order.
func (r *Recorder) Returns() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, len(r.returns))
	for i, ret := range r.returns {
		keys[i] = ret.key
	}
	return keys
}

// Returned reports whether the handler filed under key has returned, and
// its context's cause then.
func (r *Recorder) Returned(key string) (cause error, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ret := range r.returns {
		if ret.key == key {
			return ret.cause, true
		}
	}
	return nil, false
}

// Context returns the context of the handler filed under key, or nil if
// none has started.
func (r *Recorder) Context(key string) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctxs[key]
}

// CheckCauses fails t unless every recorded handler's context has ended
// with a cause matching want.
func (r *Recorder) CheckCauses(t testing.TB, want error) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, ctx := range r.ctxs {
		if cause := context.Cause(ctx); !errors.Is(cause, want) {
			t.Errorf("wiretest: handler %s: context ended with %v, want %v", key, cause, want)
		}
	}
}
