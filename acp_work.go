package acprpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc/internal/wire"
)

// ErrWorkEnded is the reason a session/update sent under a Work's context is
// dropped: the work has already ended with its idle state_update, which no
// update of that work may follow.
var ErrWorkEnded = errors.New("acprpc: the session's foreground work has ended")

// errWorkDone ends a Work's context once the work has ended, as an answer
// ends a request's context.
var errWorkDone = errors.New("acprpc: foreground work ended")

// Work is a session's foreground work on an ACP v2 connection: the turn a
// prompt starts, which runs on after session/prompt is answered. It ends with
// exactly one idle state_update (End, or the layer once Options.CancelGrace
// has passed after a cancel), after every update sent under its context and
// never followed by one; a cancelled work ends "cancelled" whatever End is
// told, and one cancelled before its prompt was inserted ends without any.
// Its context ends with ErrSessionCancelled (session/cancel, session/close),
// ErrShutdown, ErrConnClosed, or once the work has ended; calls under it
// cancel as calls under a request's context do. docs/versions.md has the
// rules.
type Work struct {
	ctx       workContext // held in the Work: Context hands out its address, and the two cost one allocation
	cancel    context.CancelCauseFunc
	conn      *Conn
	sessionID string
	done      chan struct{} // closed when the work ends
	newer     *Work         // the session's next work in the work table; the table's lock protects it

	// mu protects the fields below and orders the work's updates: each is
	// queued (writer.send, which only queues and never runs the Sent hook)
	// under it, and the ending too, after them. It is taken before the work
	// table's lock and the writer's, never after.
	mu      sync.Mutex
	cause   error // the first cancellation cause
	started bool
	prompts int // prompts that joined the work and are not answered yet
	grace   *time.Timer
	// ended and cancelled are written under mu, and read without it by the
	// table, which never takes mu.
	ended, cancelled atomic.Bool
}

// workContext is a Work's context; its values name the work and the Conn.
type workContext struct {
	context.Context
	w *Work
}

func (wc *workContext) Value(key any) any {
	switch key {
	case workKey:
		return wc.w
	case connKey:
		return wc.w.conn
	}
	return wc.Context.Value(key)
}

func newWork(c *Conn, sessionID string) *Work {
	w := &Work{conn: c, sessionID: sessionID, done: make(chan struct{})}
	ctx, cancel := context.WithCancelCause(c.base)
	w.ctx, w.cancel = workContext{Context: ctx, w: w}, cancel
	return w
}

// Context returns the work's context. Pass it, or a context derived from
// it, to the calls and updates of the work.
func (w *Work) Context() context.Context { return &w.ctx }

// SessionID names the work's session.
func (w *Work) SessionID() string { return w.sessionID }

// Done is closed once the work has ended: its idle state_update is queued,
// or it was cancelled before it started. The connection closing does not
// close it; see Context for that.
func (w *Work) Done() <-chan struct{} { return w.done }

// End ends the work with an idle state_update carrying stopReason
// ("end_turn", "cancelled", ...), queued after every update the work has
// sent. A work that was cancelled ends with "cancelled" whatever stopReason
// says: ACP requires it even when the abort surfaced as an error. Only the
// first ending is sent; End after that returns ErrWorkEnded, and with the
// connection closed, ErrConnClosed.
func (w *Work) End(stopReason string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended.Load() {
		return &CallError{Method: methodSessionUpdate, Err: ErrWorkEnded}
	}
	w.started = true
	if w.conn.Err() != nil {
		_ = w.endLocked(nil) // nobody to tell
		return &CallError{Method: methodSessionUpdate, Err: ErrConnClosed}
	}
	if w.cause != nil {
		stopReason = stopReasonCancelled
	}
	return w.endLocked(w.idleFrame(stopReason))
}

// idleFrame is the idle state_update that ends the work, written out
// directly: it is sent once per turn.
func (w *Work) idleFrame(stopReason string) *frame {
	f, _ := requestFrame(nil, methodSessionUpdate, nil)
	f.Buf.Truncate(f.Buf.Len() - 1) // reopen the message for its params
	f.Buf.WriteString(`,"params":{"sessionId":`)
	f.String(w.sessionID)
	f.Buf.WriteString(`,"update":{"sessionUpdate":"state_update","state":"idle"`)
	if stopReason != "" {
		f.Buf.WriteString(`,"stopReason":`)
		f.String(stopReason)
	}
	f.Buf.WriteString("}}}")
	f.info.ctx, f.info.generated = &w.ctx, true // the Sent hook sees it as the work's, and as the layer's
	return f
}

// endLocked sends f (nil for none) as the work's ending, then ends it, and
// the table lets go of it.
func (w *Work) endLocked(f *frame) error {
	w.ended.Store(true)
	w.conn.acp.foreground.remove(w)
	if w.grace != nil {
		w.grace.Stop()
	}
	var err error
	if f != nil && w.conn.writer.send(f) != nil {
		err = &CallError{Method: methodSessionUpdate, Err: ErrConnClosed}
	}
	close(w.done)
	w.cancel(errWorkDone)
	return err
}

// start records that the work exists for the peer: its prompt was inserted,
// or it sent an update. A cancelled work that the layer already ended
// without an idle state_update, because it had not started, gets it now.
func (w *Work) start() {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return
	}
	w.started = true
	var err error
	if w.ended.Load() && w.cause != nil {
		err = w.conn.writer.send(w.idleFrame(stopReasonCancelled))
	}
	w.mu.Unlock()
	if err != nil { // logged without the lock: the handler is the application's
		w.conn.log.Debug("acprpc: idle state_update not sent", "session", w.sessionID)
	}
}

// promptRejected records that a prompt of the work was answered with an
// error: never inserted. A work that has not started and has no prompt
// left ends at once, without an idle state_update: there was no turn.
func (w *Work) promptRejected() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.prompts--
	if w.prompts <= 0 && !w.started && !w.ended.Load() {
		_ = w.endLocked(nil)
	}
}

// cancelWith cancels the work for cause; the first cause is kept, and the
// grace period starts: a work still running when it passes is ended by the
// layer.
func (w *Work) cancelWith(cause error) {
	w.mu.Lock()
	if w.cause != nil || w.ended.Load() {
		w.mu.Unlock()
		return
	}
	w.cause = cause
	w.cancelled.Store(true)
	w.grace = w.conn.afterGrace(w.endForApplication)
	w.mu.Unlock()
	w.cancel(cause)
}

// endForApplication ends a cancelled work whose application has not ended
// it within the grace period: with the idle state_update if it started.
func (w *Work) endForApplication() {
	w.mu.Lock()
	overdue := !w.ended.Load() && w.conn.Err() == nil
	started := w.started
	w.mu.Unlock()
	if !overdue {
		return
	}
	if started { // logged before the work ends, and without its lock: the handler is the application's
		w.conn.log.Warn("acprpc: the foreground work did not end within its grace period; its idle state_update is sent for it",
			"session", w.sessionID)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended.Load() || w.conn.Err() != nil {
		return // the application ended it meanwhile
	}
	var f *frame
	if w.started {
		f = w.idleFrame(stopReasonCancelled)
	}
	_ = w.endLocked(f)
}

// sendUpdate queues a session/update of the work, unless the work has ended.
// An idle state_update is the work's ending, as End is.
func (w *Work) sendUpdate(f *frame) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended.Load() {
		f.release()
		return &CallError{Method: methodSessionUpdate, Err: ErrWorkEnded}
	}
	w.started = true
	if stopReason, idle := idleStopReason(f.Buf.Bytes()); idle {
		if w.cause != nil && stopReason != stopReasonCancelled {
			f.release()
			f = w.idleFrame(stopReasonCancelled)
		}
		return w.endLocked(f)
	}
	if w.conn.writer.send(f) != nil {
		return &CallError{Method: methodSessionUpdate, Err: ErrConnClosed}
	}
	return nil
}

// idleStopReason reports whether msg is a session/update carrying an idle
// state_update, and its stop reason.
func idleStopReason(msg []byte) (string, bool) {
	// The value is compared as written below, so a message without these
	// bytes is no idle state_update; most updates are spared the parse.
	if !bytes.Contains(msg, []byte(`"state_update"`)) {
		return "", false
	}
	update := wire.Member(wire.Member(msg, "params"), "update")
	if string(wire.Member(update, "sessionUpdate")) != `"state_update"` || string(wire.Member(update, "state")) != `"idle"` {
		return "", false
	}
	var reason string
	_ = json.Unmarshal(wire.Member(update, "stopReason"), &reason)
	return reason, true
}

// WorkFromContext returns the foreground work that ctx belongs to: a Work's
// own context (or one derived from it), or the context of a v2
// session/prompt handler, whose work was registered when the prompt was
// read, before the next message, so a session/cancel right behind the
// prompt always finds it. A prompt that was held until earlier work ended
// gets the session's next work. It reports false for any other context.
func WorkFromContext(ctx context.Context) (*Work, bool) {
	if w, ok := ctx.Value(workKey).(*Work); ok {
		return w, true
	}
	if in, ok := ctx.Value(inRequestKey).(*inRequest); ok && in.req.Method == methodSessionPrompt && in.conn.protocol().foreground {
		return in.currentWork(), true
	}
	return nil, false
}

// BeginWork returns the session's foreground work in progress, or starts a
// new one: for work the agent starts on its own, which ACP v2 allows. The
// work counts as started.
func (c *Conn) BeginWork(sessionID string) *Work {
	w := c.acp.foreground.current(c, sessionID)
	w.start()
	return w
}

// currentWork is the work of a v2 prompt's handler: the one registered when
// it was read, or, if that has ended meanwhile (the prompt was held), the
// session's next, cancelled already if the prompt was cancelled by its
// session.
func (r *inRequest) currentWork() *Work {
	r.mu.Lock()
	w, cause := r.acp.work, r.cause
	r.mu.Unlock()
	if w != nil && !w.ended.Load() {
		return w
	}
	w = r.conn.acp.foreground.current(r.conn, r.req.SessionID)
	if errors.Is(cause, ErrSessionCancelled) {
		w.cancelWith(cause)
	}
	r.mu.Lock()
	r.acp.work = w
	r.mu.Unlock()
	return w
}

// workTable holds each session's foreground works that have not ended:
// the one in progress, and the cancelled ones still winding down, oldest
// first, as a list linked through Work.newer (a session rarely has more
// than one, and a list costs no allocation of its own). A work leaves it as
// it ends, so what it holds is bounded by the works running, never by the
// sessions a connection has seen. Its lock comes after a Work's mu (an
// ending work removes itself), never before.
type workTable struct {
	mu sync.Mutex       // protects m and the works' newer
	m  map[string]*Work // each session's oldest work
}

// current returns the session's work in progress, neither ended nor
// cancelled, or registers a new one. A cancelled work still winding down is
// no longer current: what comes after the cancel is new work, and the
// cancelled one stays in the table until it ends.
func (t *workTable) current(c *Conn, sessionID string) *Work {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := t.m[sessionID]
	for last != nil && last.newer != nil {
		last = last.newer
	}
	if last != nil && !last.ended.Load() && !last.cancelled.Load() {
		return last
	}
	w := newWork(c, sessionID)
	switch {
	case last != nil:
		last.newer = w
	case t.m == nil:
		t.m = map[string]*Work{sessionID: w}
	default:
		t.m[sessionID] = w
	}
	return w
}

// remove lets go of a work that has ended.
func (t *workTable) remove(w *Work) {
	t.mu.Lock()
	defer t.mu.Unlock()
	oldest := t.m[w.sessionID]
	if oldest == w {
		if w.newer == nil {
			delete(t.m, w.sessionID)
		} else {
			t.m[w.sessionID] = w.newer
		}
		w.newer = nil
		return
	}
	for prev := oldest; prev != nil; prev = prev.newer {
		if prev.newer == w {
			prev.newer, w.newer = w.newer, nil
			return
		}
	}
}

// unended returns the session's works that have not ended.
func (t *workTable) unended(sessionID string) []*Work {
	t.mu.Lock()
	defer t.mu.Unlock()
	return notEnded(nil, t.m[sessionID])
}

// inProgress returns every session's works that have not ended.
func (t *workTable) inProgress() []*Work {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*Work
	for _, oldest := range t.m {
		out = notEnded(out, oldest)
	}
	return out
}

// notEnded appends to out the works from oldest on that have not ended;
// the table's lock is held.
func notEnded(out []*Work, oldest *Work) []*Work {
	for w := oldest; w != nil; w = w.newer {
		if !w.ended.Load() {
			out = append(out, w)
		}
	}
	return out
}
