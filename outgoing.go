package acprpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/acpkit/acprpc/internal/wire"
)

// pendingCall is one of our requests, from its registration to the one
// ending that end records: the peer's answer, an answer too large to keep,
// or the connection closing.
type pendingCall struct {
	done    chan struct{} // closed by end
	method  string
	result  []byte
	errObj  []byte
	barrier uint64  // notifications to handle before the answer is seen
	acp     acpCall // what the protocol follows of the call (acp_rules.go); set under the table's lock before it is sent
	// released: the caller gave up on the call with ReleaseOnCancel, and
	// the call waits among the released, not the calls awaiting answers.
	released bool
}

// end records how the call ended and wakes its caller. It is the only place
// done is closed: whatever ends a call, the caller finds the barrier set.
func (pc *pendingCall) end(result, errObj []byte, barrier uint64) {
	pc.result, pc.errObj, pc.barrier = result, errObj, barrier
	close(pc.done)
}

// ended reports, without waiting, whether end has run.
func (pc *pendingCall) ended() bool {
	select {
	case <-pc.done:
		return true
	default:
		return false
	}
}

// answered reports whether the call ended with an answer rather than with
// the connection.
func (pc *pendingCall) answered() bool { return pc.result != nil || pc.errObj != nil }

// callTable is the table of our requests awaiting answers. IDs count up
// from 1 and are never reused, so a late answer to a cancelled call can never
// be taken for the answer to a newer one.
type callTable struct {
	limit int // set before the connection starts

	mu   sync.Mutex // protects the fields below
	last int64
	m    map[int64]*pendingCall
	// released holds the calls given up with ReleaseOnCancel, so that a
	// late answer is known for one, and order their IDs oldest first: at
	// most limit are kept, the oldest forgotten first.
	released      map[int64]*pendingCall
	releasedOrder []int64
	closed        bool
	draining      bool   // Shutdown has begun: no call is registered any more
	callers       int    // Calls that have registered and not returned
	idle          signal // fired when callers drops to 0
}

// register adds a call, or says why it cannot: the connection closed, or
// too many calls await their answers.
func (t *callTable) register(method string) (int64, *pendingCall, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, nil, ErrConnClosed
	}
	if t.draining {
		return 0, nil, cancelledCall{ctxErr: ErrShutdown}
	}
	if len(t.m) >= t.limit {
		return 0, nil, ErrTooManyCalls
	}
	if t.m == nil {
		t.m = make(map[int64]*pendingCall)
	}
	t.last++
	// Every field the read goroutine reads is set before the call is in the
	// table, where an answer can find it.
	pc := &pendingCall{done: make(chan struct{}), method: method}
	t.m[t.last] = pc
	t.callers++
	return t.last, pc, nil
}

// leave records that a Call that registered has returned.
func (t *callTable) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.callers--
	if t.callers == 0 {
		t.idle.fire()
	}
}

// drain stops the table registering calls and returns a channel closed once
// every Call in progress has returned. A call whose caller has given up
// waits on in the table for its late answer, and is not waited for.
func (t *callTable) drain() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.draining = true
	if t.callers == 0 {
		return closedChan
	}
	return t.idle.wait()
}

// take removes and returns the call with the given ID, awaiting its answer
// or released, or nil.
func (t *callTable) take(id int64) *pendingCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pc := t.m[id]; pc != nil {
		delete(t.m, id)
		return pc
	}
	pc := t.released[id]
	delete(t.released, id)
	return pc
}

// release moves a cancelled call whose caller has returned out of the calls
// awaiting answers, so that it no longer counts against the limit, into the
// released ones, where its late answer is still known for the last limit
// calls released.
func (t *callTable) release(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pc := t.m[id]
	if pc == nil {
		return // answered meanwhile, or the connection closed
	}
	delete(t.m, id)
	pc.released = true
	if t.released == nil {
		t.released = make(map[int64]*pendingCall)
	}
	if len(t.releasedOrder) >= t.limit {
		delete(t.released, t.releasedOrder[0])
		t.releasedOrder = t.releasedOrder[1:]
	}
	t.released[id] = pc
	t.releasedOrder = append(t.releasedOrder, id)
}

// closeAll ends every pending call with no answer: each reports the
// connection closed.
func (t *callTable) closeAll() {
	t.mu.Lock()
	t.closed = true
	ended := t.m
	t.m, t.released, t.releasedOrder = nil, nil, nil
	t.mu.Unlock()
	for _, pc := range ended {
		pc.end(nil, nil, 0)
	}
}

// methodOf returns the method of the call rawID names, if one waits.
func (t *callTable) methodOf(rawID []byte) string {
	id, ok := ownID(rawID)
	if !ok {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if pc := t.m[id]; pc != nil {
		return pc.method
	}
	if pc := t.released[id]; pc != nil {
		return pc.method
	}
	return ""
}

// ownID reads an ID that may be one this side issued: a positive integer.
func ownID(raw []byte) (int64, bool) {
	k, _ := wire.KeyOf(raw)
	return k.Own()
}

func (t *callTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// endCall ends the call that rawID names with an answer, behind every
// notification read so far; it runs on the read goroutine. An answer nobody
// waits for (a late answer to a call that returned on cancellation, or a
// stray ID) is dropped.
func (c *Conn) endCall(rawID, result, errObj []byte) {
	var pc *pendingCall
	if id, ok := ownID(rawID); ok {
		pc = c.calls.take(id)
	}
	if pc == nil {
		c.log.Debug("acprpc: dropping a response to no pending call", "id", firstBytes(rawID, peerTextShown))
		return
	}
	if result != nil {
		result = c.acp.callAnswered(pc, result) // before the next message is read
	}
	if pc.released {
		c.log.Debug("acprpc: dropping the late answer to a call released on its cancel", "id", string(rawID), "method", pc.method)
		pc.end(nil, nil, 0) // its caller has returned; what waits for its end (acp_turn.go) goes on
		return
	}
	pc.end(result, errObj, c.notes.barrier())
}

// deliver matches a response to its call. A response that breaks the
// protocol fails the call it names, so that the call neither waits for an
// answer that has come nor takes a broken one for a success.
func (c *Conn) deliver(m *message) {
	if m.Invalid != "" {
		if msg, ok := c.peerWarned.invalidResponse.due("acprpc: invalid response from peer"); ok {
			c.log.Warn(msg, "id", firstBytes(m.ID, peerTextShown), "error", m.Invalid)
		}
		if m.ID != nil {
			c.failCall(m.ID, &Error{Code: CodeInternalError, Message: "invalid response: " + m.Invalid})
		}
		return
	}
	if m.ID == nil {
		c.idlessAnswer(m.Error)
		return
	}
	c.endCall(m.ID, m.Result, m.Error)
}

// failCall ends the call that rawID names with an error of this side's own,
// such as an answer too large to keep.
func (c *Conn) failCall(rawID []byte, e *Error) {
	errObj, _ := json.Marshal(e)
	c.endCall(rawID, nil, errObj)
}

// Call sends a request and waits for its answer, which it decodes into
// result: a non-nil pointer, or nil to ignore the result. Params may be any
// value that encodes to a JSON object or array, or nil for none. Call
// refuses, before it sends anything, a result it could not decode into,
// params of another kind, and a method ACP forbids at this point (a
// session/new before initialize); the *CallError says what to do instead.
//
// If ctx ends first, the peer is sent exactly one $/cancel_request for this
// request, and Call returns a *CallError that matches both ctx.Err() and
// ErrCancelled, at once or, with WaitAfterCancel, once the peer's answer
// arrives (a result then returns nil, so a caller can use a marker or a
// partial result); a wait that runs out says which cancel was sent and how
// long the call waited. A session/prompt is cancelled as ACP prescribes
// instead: session/cancel for its session, with everything CancelSession
// does, then a wait of Options.TurnCancelWait for the agent's answer, whose
// stopReason "cancelled" Call returns with a nil error (see
// CancelRequestOnly for $/cancel_request alone). A prompt on a session
// whose cancelled turn the agent has not answered yet is sent once that
// answer is read, or TurnCancelWait has passed since that turn's cancel
// (Shutdown or ctx ending first, it is not sent). An error answer comes back
// as a *CallError wrapping the peer's *Error. If the connection closes
// first, or the peer's input ends (no answer can come any more; the
// connection closes right after it has answered what it read), the error
// matches ErrConnClosed, which no answer of the peer's can.
//
// Call returns the answer only after every notification the peer sent
// before it has been handled. The ordering never costs a caller its
// context: if ctx ends while the answer waits for them (after a cancel, if
// WaitAfterCancel passes), Call returns the cancelled error, with the
// answer in it: an error answer wrapped, a result decoded into result. No
// $/cancel_request is sent for an answered call. A call made from a
// notification handler (with its context) waits only for the notifications
// before that one, since the others cannot run until it returns.
func (c *Conn) Call(ctx context.Context, method string, params, result any, opts ...CallOption) error {
	if err := resultTarget(result); err != nil {
		return &CallError{Method: method, Err: err}
	}
	if err := c.acp.mayCall(method); err != nil {
		return &CallError{Method: method, Err: err}
	}
	co := c.callOptions(opts)
	if err := ctx.Err(); err != nil {
		return &CallError{Method: method, Err: cancelledCall{ctxErr: err}}
	}
	if err := c.Err(); err != nil { // closed, though the table may not be closed yet
		return &CallError{Method: method, Err: err}
	}
	if c.noteOf(ctx) != nil {
		// Its answer may be behind notifications that fill the queue, which
		// the reader must read on past to reach it.
		c.notes.callStarted()
		defer c.notes.callEnded()
	}
	id, pc, err := c.calls.register(method)
	if errors.Is(err, ErrConnClosed) {
		c.cutShortByInputEnd(ctx)
		err = c.closedErr() // says what closed the connection: an agent's exit, a failed write
	}
	if err != nil {
		return &CallError{Method: method, Err: err}
	}
	defer c.calls.leave()
	var idBuf [20]byte
	rawID := strconv.AppendInt(idBuf[:0], id, 10)
	callErr := func(err error) error { return &CallError{Method: method, ID: ID{raw: string(rawID)}, Err: err} }
	f, err := requestFrame(rawID, method, params)
	if err != nil {
		c.calls.take(id)
		return &CallError{Method: method, Err: paramsError(err, params)} // not sent: no ID
	}
	f.info.ctx = ctx
	if err := c.acp.callSent(ctx, pc, f); err != nil {
		c.calls.take(id)
		f.release()
		return &CallError{Method: method, Err: err} // not sent: no ID
	}
	if err := c.writer.sendNow(f); err != nil {
		c.calls.take(id)
		c.writeFailed(err)
		return callErr(c.closedErr())
	}
	select {
	case <-pc.done:
		return c.complete(ctx, ctx.Done(), nil, pc, result, callErr, nil)
	case <-ctx.Done():
		if c.Err() != nil {
			// The connection is closing, which also ends every handler's
			// context: the call ends with the connection, not as a cancel.
			<-pc.done
			return c.complete(ctx, ctx.Done(), nil, pc, result, callErr, nil)
		}
		if pc.ended() {
			return c.answeredWhenCtxEnded(ctx, pc, result, callErr, co)
		}
		how := c.sendCancel(ctx, pc, id, &co)
		return c.afterCancel(ctx, id, pc, result, callErr, co, cancelledCall{ctxErr: ctx.Err(), sent: how})
	case <-c.stopping:
		if pc.ended() { // answered as Shutdown began: no cancel is owed
			return c.complete(ctx, ctx.Done(), nil, pc, result, callErr, nil)
		}
		// Shutdown cancels this side's calls as it cancels the peer's
		// requests: the peer is told, and may still answer.
		how := c.sendCancel(ctx, pc, id, &co)
		return c.afterCancel(ctx, id, pc, result, callErr, co, cancelledCall{ctxErr: ErrShutdown, sent: how})
	}
}

// answeredWhenCtxEnded ends a call whose context had ended when its caller
// came to wait, and whose answer had come too: select picks at random among
// what is ready, and the caller may have been slow to get there. The answer
// is the call's, with no cancel sent for it; the notifications before it
// are waited for as after a cancel, up to co's WaitAfterCancel, after which
// the call ends cancelled, the answer travelling with the error.
func (c *Conn) answeredWhenCtxEnded(ctx context.Context, pc *pendingCall, result any, callErr func(error) error, co callOptions) error {
	if co.waitAfterCancel <= 0 {
		return c.complete(ctx, ctx.Done(), nil, pc, result, callErr, nil)
	}
	wait := time.NewTimer(co.waitAfterCancel)
	defer wait.Stop()
	return c.complete(ctx, nil, wait.C, pc, result, callErr, nil)
}

// afterCancel ends a call that was cancelled, for why, and whose cancel is
// sent: it waits up to co's WaitAfterCancel for the answer, and, with
// ReleaseOnCancel, a call that returns without it leaves the calls awaiting
// answers. A wait that runs out says so, and which cancel the peer had.
func (c *Conn) afterCancel(ctx context.Context, id int64, pc *pendingCall, result any, callErr func(error) error, co callOptions, why cancelledCall) error {
	if co.waitAfterCancel > 0 {
		// A timer, not a context with a timeout: a burst of cancelled calls
		// waits for thousands of answers, and the context costs four times
		// the time and twice the allocations.
		wait := time.NewTimer(co.waitAfterCancel)
		defer wait.Stop()
		select {
		case <-pc.done:
			return c.complete(ctx, nil, wait.C, pc, result, callErr, why.ctxErr)
		case <-wait.C:
		}
		why.waited = co.waitAfterCancel
	}
	if co.releaseOnCancel {
		c.calls.release(id)
	}
	return callErr(why)
}

// complete turns a finished call into Call's return. giveUp, or timeout,
// bounds the wait for the notifications before the answer: ctx's Done, or
// once the answer was awaited after ctx ended (ctxErr set), the end of that
// wait.
//
// An answer reaches its caller only after the notifications read before it:
// if the bound comes first, the call ends with ctx's error, or ctxErr, the
// answer travelling with it. An answer read before the connection closed is
// the call's outcome, even when the close dropped notifications read before
// it.
func (c *Conn) complete(ctx context.Context, giveUp <-chan struct{}, timeout <-chan time.Time, pc *pendingCall, result any, callErr func(error) error, ctxErr error) error {
	if !pc.answered() {
		c.cutShortByInputEnd(ctx)
		return callErr(c.closedErr())
	}
	// Not reached, with the connection open: the bound came (the notifier
	// stops only once the connection has closed).
	behind := !c.notes.waitFor(c.barrierFor(ctx, pc.barrier), giveUp, timeout) && c.Err() == nil
	if behind && ctxErr == nil {
		ctxErr = ctx.Err()
	}
	if pc.errObj != nil {
		rpcErr := &Error{}
		if err := decodeJSON(pc.errObj, rpcErr, true); err != nil { // a member of a line the read loop validated
			rpcErr = &Error{Code: CodeInternalError, Message: "malformed error answer: " + string(pc.errObj)}
		}
		if ctxErr != nil {
			return callErr(cancelledCall{ctxErr: ctxErr, answer: rpcErr})
		}
		return callErr(c.acp.callFailed(rpcErr))
	}
	var decodeErr error
	if result != nil {
		decodeErr = decodeJSON(pc.result, result, true) // a member of a line the read loop validated
	}
	switch {
	case behind:
		return callErr(cancelledCall{ctxErr: ctxErr})
	case decodeErr != nil:
		return callErr(c.acp.callFailed(fmt.Errorf("cannot decode result: %w", decodeErr)))
	}
	return nil
}

// barrierFor is the barrier a call made under ctx waits for. A call made
// from a notification handler cannot wait for that notification or the ones
// behind it: they run only once it returns.
func (c *Conn) barrierFor(ctx context.Context, barrier uint64) uint64 {
	if nc := c.noteOf(ctx); nc != nil && nc.seq <= barrier {
		return nc.seq - 1
	}
	return barrier
}

// noteOf returns the notification whose handler's context ctx is, or
// derives from, if it is one of this connection's.
func (c *Conn) noteOf(ctx context.Context) *noteContext {
	if nc, ok := ctx.Value(noteKey).(*noteContext); ok && nc.conn == c {
		return nc
	}
	return nil
}

// Notify sends a notification. It returns once the message is queued,
// without waiting for the peer to read it, unless Options.MaxUnsentNotifications
// of this side's notifications, or MaxUnsentNotificationBytes of their bytes,
// wait to be written already: then it waits for room, which the peer makes by
// reading. It waits no longer than ctx: once ctx ends, blocked or not, it
// returns a *CallError matching ErrCancelled and ctx.Err() and sends nothing,
// so a cancelled turn stops at once. Answers, requests and $/cancel_request
// never wait for room and are never held back by it; each goes out behind at
// most the limit of notifications queued before it, so that every update a
// turn sent is written before the turn's answer. A peer that stops reading
// thus holds this side to the limit (plus one message for each goroutine
// sending at that instant), and a turn streaming updates to the pace its
// peer reads them. On a Stream over a descriptor whose unread bytes the
// system can count (Linux), a notification also waits, at most 2 ms, while
// the peer has written what the read goroutine has not yet read: the
// peer's message (a session/cancel, most likely, under a stream) is taken
// in before the stream runs on, rather than behind a core the stream keeps
// busy. A notification handler that sends notifications waits
// too: a peer that stops reading until its own writes are read would then
// stop both sides, as with any bounded pipe.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return &CallError{Method: method, Err: cancelledNotify(err)}
	}
	if err := c.Err(); err != nil { // closed, though the writer may not have stopped yet
		return &CallError{Method: method, Err: err}
	}
	f, err := requestFrame(nil, method, params)
	if err != nil {
		return &CallError{Method: method, Err: paramsError(err, params)}
	}
	f.info.ctx, f.note = ctx, true
	if err := c.writer.awaitNoteRoom(ctx, f.Buf.Len()); err != nil {
		f.release()
		if err == errNoRoom {
			return &CallError{Method: method, Err: cancelledNotify(ctx.Err())}
		}
		c.writeFailed(err)
		return &CallError{Method: method, Err: c.closedErr()}
	}
	if sent, err := c.acp.notifying(ctx, method, f); sent {
		return err
	}
	if err := c.writer.send(f); err != nil {
		c.writeFailed(err)
		return &CallError{Method: method, Err: c.closedErr()}
	}
	return nil
}

// resultTarget checks that Call can decode an answer into result: nil, to
// ignore it, or a non-nil pointer. Anything else would fail only once the
// whole turn had run, and json.Unmarshal's words would not say why.
func resultTarget(result any) error {
	if result == nil {
		return nil
	}
	v := reflect.ValueOf(result)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		return nil
	}
	what := fmt.Sprintf("a %T, not a pointer", result)
	if v.Kind() == reflect.Pointer {
		what = fmt.Sprintf("a nil %T", result)
	}
	return fmt.Errorf("not sent: the result is %s, which an answer cannot be decoded into: "+
		"pass a pointer (&result), or nil to ignore the result", what)
}

// paramsError is the reason params that cannot go out are refused; either
// way nothing was sent.
func paramsError(err error, params any) error {
	var kind *wire.ParamsKindError
	if errors.As(err, &kind) {
		return fmt.Errorf("not sent: the params (%T) encode to %s, and JSON-RPC's params are an object or an array: "+
			"pass a struct, a map or a slice, or nil for none", params, kind.Kind)
	}
	return fmt.Errorf("not sent: cannot encode the params: %w", err)
}

// cutShortByInputEnd cancels the request whose handler made, with ctx, a
// call that the end of the peer's input has left without an answer, as a
// failed write does: the handler that returns the call's error then has
// its request answered as cancelled (its marker or -32800), cut short by
// the peer's end, not failed with -32603. A call made otherwise, or once
// the connection has closed, changes nothing.
func (c *Conn) cutShortByInputEnd(ctx context.Context) {
	end := c.inputEnd.Load()
	if end == nil || c.Err() != nil {
		return
	}
	if r, ok := ctx.Value(inRequestKey).(*inRequest); ok && r.conn == c {
		r.cancelWith(*end)
	}
}

// closedErr is the error of a call the connection's end left unanswered:
// why the connection closed, which matches ErrConnClosed and says what ended
// it (an agent's exit, a failed write, the end of the input).
func (c *Conn) closedErr() error {
	if err := c.Err(); err != nil {
		return err
	}
	if err := c.inputEnd.Load(); err != nil {
		return *err
	}
	return ErrConnClosed
}

// CallOption adjusts one Call.
type CallOption func(*callOptions)

type callOptions struct {
	waitAfterCancel time.Duration
	waitSet         bool // the call's own WaitAfterCancel, which the protocol keeps
	releaseOnCancel bool
	requestCancel   bool // the protocol's cancel of the request alone (CancelRequestOnly)
}

// callOptions returns the options of one Call: the connection's, adjusted
// by opts.
func (c *Conn) callOptions(opts []CallOption) callOptions {
	co := callOptions{waitAfterCancel: c.opts.WaitAfterCancel}
	if len(opts) > 0 {
		co = co.with(opts)
	}
	return co
}

// with returns co adjusted by opts. It is a function of its own, kept from
// being inlined, so that only a Call given options pays for the copy the
// options reach, which escapes to the heap.
//
//go:noinline
func (co callOptions) with(opts []CallOption) callOptions {
	for _, o := range opts {
		o(&co)
	}
	return co
}

// WaitAfterCancel sets, for one Call, how long to wait for the peer's answer
// after the call's context ends; see Options.WaitAfterCancel.
func WaitAfterCancel(d time.Duration) CallOption {
	return func(o *callOptions) { o.waitAfterCancel, o.waitSet = d, true }
}

// CancelRequestOnly makes one Call, when its context ends or Shutdown
// cancels it, send the peer $/cancel_request for it alone, even for a
// session/prompt, whose turn is otherwise cancelled with session/cancel
// (see Options.TurnCancelWait). It is for a tool that checks how an agent
// honours $/cancel_request of a prompt, and for an agent known to honour it
// and not session/cancel. The call then waits WaitAfterCancel, not
// TurnCancelWait.
func CancelRequestOnly() CallOption {
	return func(o *callOptions) { o.requestCancel = true }
}

// ReleaseOnCancel makes one Call, once it has returned on its cancel without
// the peer's answer, give up its place among the Options.MaxOutgoing calls
// awaiting answers, as the TypeScript SDK's stopWaitingOnCancel stops
// waiting: a peer that never answers cancelled calls cannot then fill the
// table. Without it a cancelled call holds its place until the peer answers,
// which keeps a peer that is slow to stop from being sent more than
// MaxOutgoing calls. Either way the late answer is dropped; for a released
// call it is still known as one (and logged so at debug level) for the last
// MaxOutgoing calls released, and after that taken for an answer to no
// call. The call's ID is never reused. With WaitAfterCancel, the call is
// released once that wait has ended without the answer.
func ReleaseOnCancel() CallOption {
	return func(o *callOptions) { o.releaseOnCancel = true }
}
