package acprpc

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc/internal/wire"
)

// serve registers a request in the tracker and starts its handler, with
// what the protocol's read asked of its entry. It runs on the read
// goroutine, before anything else is read.
func (c *Conn) serve(m *message, needs acpNeeds) {
	if c.handler == nil {
		c.refuse(m, MethodNotFound(m.Method))
		return
	}
	if c.incoming.len() >= c.opts.MaxInFlight {
		c.refuse(m, &Error{Code: CodeInternalError,
			Message: fmt.Sprintf("Internal error: too many requests in flight (limit %d)", c.opts.MaxInFlight)})
		return
	}
	if held := c.incoming.held.Load(); held+int64(m.Size) > int64(c.opts.MaxInFlightBytes) {
		c.refuse(m, &Error{Code: CodeInternalError, Message: fmt.Sprintf(
			"Internal error: too many bytes in flight (%d held, limit %d)", held, c.opts.MaxInFlightBytes)})
		return
	}
	r := c.newInRequest(m)
	if !c.incoming.add(r) {
		r.cancel(errRequestDone)
		var f *frame
		if c.incoming.isDraining() { // Shutdown: no new work, answered as cancelled
			f = c.cancelledFrame(m.ID, m.Method)
		} else {
			f = errorFrame(m.ID, &Error{Code: CodeInvalidRequest,
				Message: "Invalid request: request id " + string(m.ID) + " is already in flight"})
		}
		f.info.ctx = r.handlerCtx
		c.replyOwn(m.Method, f)
		return
	}
	c.acp.registered(r, needs)
	r.armDeadline(c.opts.HandlerTimeout)
	c.pool.start(r)
}

// refuse answers a request the connection does not run, with an error of
// its own.
func (c *Conn) refuse(m *message, e *Error) {
	c.replyOwn(m.Method, errorFrame(m.ID, e))
}

// replyOwn sends an answer the library built itself to a request of method
// ("" when it is not known), labelled so for the Sent hook. Every answer
// that no handler returned goes out here, or through answer with a frame
// of cancelledFrame, which labels it the same way.
func (c *Conn) replyOwn(method string, f *frame) {
	f.info.method, f.info.generated = method, true
	c.reply(f)
}

// handlerContext is the context a handler gets for req: ctx, or what
// Options.HandlerContext derives from it. own is the key under which ctx
// finds itself, which tells a derived context from a stranger.
func (c *Conn) handlerContext(ctx context.Context, req *Request, own any) (derived context.Context) {
	if c.opts.HandlerContext == nil {
		return ctx
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("acprpc: Options.HandlerContext panicked; using the request's context",
				"method", req.Method, "id", req.ID.String(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			derived = ctx
		}
	}()
	derived = c.opts.HandlerContext(ctx, req)
	switch {
	case derived == nil:
		return ctx
	case derived.Value(own) != ctx.Value(own):
		c.log.Error("acprpc: Options.HandlerContext returned a context that does not derive from the request's; using the request's",
			"method", req.Method, "id", req.ID.String())
		return ctx
	}
	return derived
}

// invoke calls the handler, turning a panic into a -32603 error.
func (c *Conn) invoke(ctx context.Context, req *Request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("acprpc: handler panicked", "method", req.Method, "id", req.ID.String(),
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			result, err = nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("Internal error: handler panicked: %v", p)}
		}
	}()
	return c.handler.Handle(ctx, req)
}

// finish answers a request whose handler has returned. A result is sent
// even after a cancel; an error after a cancel becomes the cancelled
// answer; any other error becomes an error answer.
func (c *Conn) finish(r *inRequest, result any, err error) {
	// The handler has returned and holds its message no more. Its bytes are
	// free before its answer goes out, so a peer that reads the answer can
	// send the next request at once.
	c.incoming.held.Add(-int64(r.size))
	if r.answered.Load() && r.atInputEnd.Load() {
		c.log.Info("acprpc: a handler has returned after its request was answered cancelled at the end of the peer's input, when Options.InputEndGrace ran out; its answer was dropped",
			"method", r.req.Method, "id", r.req.ID.String(), "late", r.sinceCancel().String())
		return
	}
	if r.answered.Load() { // answered for the handler when its grace period ran out
		c.log.Info("acprpc: a handler that ignored its cancel has returned; its answer was dropped, as its request was answered cancelled when Options.CancelGrace ran out",
			"method", r.req.Method, "id", r.req.ID.String(), "overran", r.sinceCancel().String())
		return
	}
	c.acp.holdAnswer(r)
	if err == nil {
		f, encErr := resultFrame(r.rawID, result)
		if encErr == nil {
			c.answer(r, f)
			return
		}
		err = &Error{Code: CodeInternalError, Message: "Internal error: cannot encode result: " + encErr.Error()}
	}
	if r.cancelledBy() != nil || saysCancelled(err) {
		c.answerCancelled(r)
		return
	}
	c.answer(r, errorFrame(r.rawID, c.acp.errorAnswer(r, answerFor(err))))
}

// answerCancelled answers a cancelled request: its handler gave up or
// failed, or has not returned within its grace period.
func (c *Conn) answerCancelled(r *inRequest) {
	c.answer(r, c.cancelledFrame(r.rawID, r.req.Method))
}

// cancelledFrame is the answer of the cancelled request rawID of method:
// the method's marker, or -32800.
func (c *Conn) cancelledFrame(rawID []byte, method string) *frame {
	var f *frame
	if marker, ok := c.acp.marker(method); ok {
		f, _ = resultFrame(rawID, marker)
	}
	if f == nil {
		f = errorFrame(rawID, errCancelledAnswer)
	}
	f.info.method, f.info.generated = method, true
	return f
}

// graceRanOut answers a cancelled request whose handler has not returned
// within Options.CancelGrace, and says so: the handler ignored its cancel,
// which its author should know.
func (c *Conn) graceRanOut(r *inRequest) {
	if !c.answer(r, c.cancelledFrame(r.rawID, r.req.Method)) {
		return // the handler returned meanwhile
	}
	c.log.Warn("acprpc: a handler ignored its cancel: it still runs after Options.CancelGrace, so its request was answered cancelled for it and its own answer will be dropped; return from the handler when its context ends",
		"method", r.req.Method, "id", r.req.ID.String(), "overran", c.opts.CancelGrace.String())
}

// answer sends f as r's one answer, and reports whether it did: any later
// attempt is dropped.
func (c *Conn) answer(r *inRequest, f *frame) bool {
	if !r.answered.CompareAndSwap(false, true) {
		f.release()
		return false
	}
	r.stopTimers()
	c.incoming.remove(r) // before sending: the peer may reuse the ID once it reads the answer
	r.cancel(errRequestDone)
	f.info.method, f.info.ctx = r.req.Method, r.handlerCtx
	c.acp.beforeAnswer(r, f)
	c.reply(f)
	r.markSent()
	c.incoming.queued()
	return true
}

// reply sends an answer; one that is queued counts against
// Options.MaxQueuedWrite.
func (c *Conn) reply(f *frame) {
	f.answer = true
	if f.info.ctx == nil {
		f.info.ctx = c.base
	}
	if err := c.writer.sendNow(f); err != nil {
		c.log.Debug("acprpc: answer not sent", "error", err.Error())
	}
}

// badMessage answers a message that is not usable, msg as read; the
// connection and everything in flight go on.
func (c *Conn) badMessage(e *wire.Problem, msg []byte) {
	if e.Code == CodeParseError {
		c.acp.notJSON(msg)
	} else {
		if msg, ok := c.peerWarned.invalid.due("acprpc: bad message from peer"); ok {
			c.log.Warn(msg, "code", e.Code, "error", e.Msg)
		}
	}
	c.replyOwn("", errorFrame(e.ID, &Error{Code: e.Code, Message: e.Msg}))
}

// workerPool runs request handlers, and the notification loop whenever it
// has notifications to handle. It bounds how many request handlers run at
// once when Options.MaxConcurrentRequests is set, and keeps goroutines
// between jobs: a new goroutine starts with a small stack, which the
// runtime copies each time a handler outgrows it (decoding JSON does); a
// reused one has grown already.
type workerPool struct {
	slots   chan struct{} // bounds running request handlers when set
	take    chan job      // unbuffered: a send succeeds only if one waits
	closed  <-chan struct{}
	waiting atomic.Int32
	idleFor time.Duration // how long a worker waits for the next job
}

// A job is what a worker runs: a request's handler (*inRequest) or the
// notification loop (*notifier). Both are pointers, so handing one to a
// worker allocates nothing.
type job interface{ runOn(p *workerPool) }

func (r *inRequest) runOn(p *workerPool) { p.run(r) }

func (n *notifier) runOn(*workerPool) { n.run() }

// maxIdleWorkers bounds the goroutines a connection keeps waiting.
const maxIdleWorkers = 16

// init readies the pool of a connection that closes with closed.
func (p *workerPool) init(maxConcurrent int, closed <-chan struct{}) {
	p.take = make(chan job)
	p.closed = closed
	p.idleFor = workerIdleTimeout
	if maxConcurrent > 0 {
		p.slots = make(chan struct{}, maxConcurrent)
	}
}

// start runs j on a goroutine of its own: an idle worker if one waits,
// else a new one.
func (p *workerPool) start(j job) {
	select {
	case p.take <- j:
	default:
		go p.work(j)
	}
}

// work runs j, then, unless enough workers wait already, waits for another
// job until the connection closes or idleFor passes with none: a busy
// connection keeps its grown goroutines, an idle one holds none, which is
// what lets one process hold many idle connections.
func (p *workerPool) work(j job) {
	idle := time.NewTimer(p.idleFor)
	defer idle.Stop()
	for {
		j.runOn(p)
		if p.waiting.Add(1) > maxIdleWorkers {
			p.waiting.Add(-1)
			return
		}
		idle.Reset(p.idleFor)
		select {
		case j = <-p.take:
		case <-p.closed:
			j = nil
		case <-idle.C:
			j = nil
		}
		p.waiting.Add(-1)
		if j == nil {
			return
		}
	}
}

// workerIdleTimeout is how long a worker waits for the next job of its
// connection before it ends.
var workerIdleTimeout = time.Second

// run waits for a slot if there is a bound, calls the handler and answers
// with what it returns.
func (p *workerPool) run(r *inRequest) {
	c := r.conn
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
			defer func() { <-p.slots }()
		case <-r.Done():
			c.finish(r, nil, context.Cause(r))
			return
		}
	}
	result, err := c.invoke(r.handlerCtx, &r.req)
	c.finish(r, result, err)
}
