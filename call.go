package acprpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// pendingCall is an outgoing request waiting for its answer.
type pendingCall struct {
	done    chan struct{} // closed when the answer arrives or the conn closes
	result  []byte
	errObj  []byte
	barrier uint64 // notifications to handle before the answer is seen
}

// calls is the table of outgoing requests. IDs count up from 1 and are never
// reused, so a late answer to a cancelled call can never be taken for the
// answer to a newer one.
type calls struct {
	mu     sync.Mutex
	limit  int
	last   int64
	m      map[int64]*pendingCall
	closed bool
}

// register adds a call, or says why it cannot: the connection closed, or
// too many calls await their answers.
func (t *calls) register() (int64, *pendingCall, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, nil, ErrConnClosed
	}
	if len(t.m) >= t.limit {
		return 0, nil, ErrTooManyCalls
	}
	if t.m == nil {
		t.m = make(map[int64]*pendingCall)
	}
	t.last++
	pc := &pendingCall{done: make(chan struct{})}
	t.m[t.last] = pc
	return t.last, pc, nil
}

// take removes and returns the call with the given ID.
func (t *calls) take(id int64) *pendingCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	pc := t.m[id]
	delete(t.m, id)
	return pc
}

// closeAll ends every pending call: with no answer, each reports the
// connection closed.
func (t *calls) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for id, pc := range t.m {
		close(pc.done)
		delete(t.m, id)
	}
}

func (t *calls) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// deliver matches a response to its call; it runs on the read goroutine. A
// response nobody waits for (a late answer to a call that returned on
// cancellation, or a stray ID) is dropped.
func (c *Conn) deliver(m *message) {
	if m.id == nil {
		c.log.Warn("acprpc: the peer answered a message it could not read", "error", string(m.errObj))
		return
	}
	var pc *pendingCall
	if id, ok := parseOwnID(m.id); ok {
		pc = c.out.take(id)
	}
	if pc == nil {
		c.log.Debug("acprpc: dropping a response to no pending call", "id", string(m.id))
		return
	}
	pc.result, pc.errObj = m.result, m.errObj
	pc.barrier = c.notes.barrier()
	close(pc.done)
}

// Call sends a request and waits for its answer, which it decodes into
// result (unless result is nil). Params may be any value that encodes to a
// JSON object or array, or nil.
//
// If ctx ends first, the peer is sent exactly one $/cancel_request for this
// request, and Call returns a *CallError that matches both ctx.Err() and
// ErrCancelled, at once or, with WaitAfterCancel, once the peer's answer
// arrives (a result then returns nil, so a caller can use a marker or a
// partial result). An error answer comes back as a *CallError wrapping the
// peer's *Error. Call returns only after every notification the peer sent
// before its answer has been handled; a call made from a notification
// handler (with its context) waits only for the notifications before that
// one, since the others cannot run until it returns.
func (c *Conn) Call(ctx context.Context, method string, params, result any, opts ...CallOption) error {
	co := callOptions{waitAfterCancel: c.opts.WaitAfterCancel}
	for _, o := range opts {
		o(&co)
	}
	if err := ctx.Err(); err != nil {
		return &CallError{Method: method, Err: cancelledCall{ctxErr: err}}
	}
	id, pc, err := c.out.register()
	if err != nil {
		return &CallError{Method: method, Err: err}
	}
	var idBuf [20]byte
	rawID := strconv.AppendInt(idBuf[:0], id, 10)
	callErr := func(err error) error { return &CallError{Method: method, ID: ID{raw: string(rawID)}, Err: err} }
	f, err := requestFrame(rawID, method, params)
	if err != nil {
		c.out.take(id)
		return callErr(fmt.Errorf("cannot encode params: %w", err))
	}
	if c.stream.out.send(f) != nil {
		c.out.take(id)
		return callErr(ErrConnClosed)
	}
	select {
	case <-pc.done:
		return c.complete(ctx, pc, result, callErr, nil)
	case <-ctx.Done():
		if c.Err() != nil {
			// The connection is closing, which also ends every handler's
			// context: the call ends with the connection (shutdown closes
			// pc.done), not as a cancel.
			<-pc.done
			return c.complete(ctx, pc, result, callErr, nil)
		}
	}
	c.sendCancel(id)
	if co.waitAfterCancel > 0 {
		t := time.NewTimer(co.waitAfterCancel)
		defer t.Stop()
		select {
		case <-pc.done:
			return c.complete(ctx, pc, result, callErr, ctx.Err())
		case <-t.C:
		}
	}
	return callErr(cancelledCall{ctxErr: ctx.Err()})
}

// complete turns a finished call into Call's return. ctxErr is set when the
// answer was awaited after the caller's context ended.
func (c *Conn) complete(ctx context.Context, pc *pendingCall, result any, callErr func(error) error, ctxErr error) error {
	if pc.result == nil && pc.errObj == nil {
		return callErr(ErrConnClosed)
	}
	barrier := pc.barrier
	// A call made from a notification handler cannot wait for that
	// notification or the ones behind it: they run only once it returns.
	if nc, ok := ctx.Value(noteKey).(*noteContext); ok && nc.conn == c && nc.seq <= barrier {
		barrier = nc.seq - 1
	}
	c.notes.waitFor(barrier)
	if pc.errObj != nil {
		rpcErr := &Error{}
		if err := json.Unmarshal(pc.errObj, rpcErr); err != nil {
			rpcErr = &Error{Code: CodeInternalError, Message: "malformed error answer: " + string(pc.errObj)}
		}
		if ctxErr != nil {
			return callErr(cancelledCall{ctxErr: ctxErr, answer: rpcErr})
		}
		return callErr(rpcErr)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(pc.result, result); err != nil {
		return callErr(fmt.Errorf("cannot decode result: %w", err))
	}
	return nil
}

// Notify sends a notification. It returns once the line is queued, without
// waiting for the peer to read it.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return &CallError{Method: method, Err: cancelledCall{ctxErr: err}}
	}
	f, err := requestFrame(nil, method, params)
	if err != nil {
		return &CallError{Method: method, Err: fmt.Errorf("cannot encode params: %w", err)}
	}
	if c.stream.out.send(f) != nil {
		return &CallError{Method: method, Err: ErrConnClosed}
	}
	return nil
}
