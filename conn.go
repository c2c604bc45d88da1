package acprpc

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Conn is one side of an ACP connection, agent or client alike: it serves
// the peer's requests and notifications with a Handler and makes its own
// calls. Every incoming request is answered exactly once; see the package
// documentation for the rules.
type Conn struct {
	opts    Options
	log     logger
	handler Handler
	stream  *Stream
	engine  *jsonrpc2.Conn

	base       context.Context // parent of every handler's context
	cancelBase context.CancelCauseFunc
	stopParent func() bool

	in    tracker
	out   calls
	notes *notifier
	slots chan struct{} // bounds running handlers when set
	idle  idleWorkers

	stats struct {
		cancelsReceived, cancelsSent atomic.Uint64
	}

	closeOnce sync.Once
	ready     chan struct{} // closed once NewConn has set every field
	closed    chan struct{}
	reason    error // why the connection closed; set before closed is closed
	readDone  chan struct{}
}

// NewConn starts serving the stream with h, which may be nil for a side
// that only calls (its peer's requests then get -32601). The connection
// closes when ctx ends, when Close is called, or when the peer's input ends.
// Handlers' contexts carry ctx's values, not its cancellation: they end
// with cause ErrConnClosed.
func NewConn(ctx context.Context, s *Stream, h Handler, opts *Options) *Conn {
	c := &Conn{
		opts:     opts.settled(),
		handler:  h,
		stream:   s,
		notes:    newNotifier(),
		ready:    make(chan struct{}),
		closed:   make(chan struct{}),
		readDone: make(chan struct{}),
		idle:     idleWorkers{take: make(chan *inRequest)},
	}
	c.log = logger{c.opts.Logger}
	c.base, c.cancelBase = context.WithCancelCause(context.WithoutCancel(ctx))
	if n := c.opts.MaxConcurrentRequests; n > 0 {
		c.slots = make(chan struct{}, n)
	}
	s.maxLine = c.opts.MaxMessageSize
	s.out.limit = c.opts.MaxQueuedWrite
	c.notes.limit = c.opts.MaxQueuedNotifications
	c.out.limit = c.opts.MaxOutgoing
	s.router = c
	go c.notes.run(c.handleNotification)
	c.engine = jsonrpc2.NewConn(context.Background(), s, engine{}, jsonrpc2.SetLogger(c.log))
	c.stopParent = context.AfterFunc(ctx, func() { c.shutdown(fmt.Errorf("%w: %w", ErrConnClosed, context.Cause(ctx))) })
	close(c.ready)
	return c
}

// engine is the Handler of sourcegraph's Conn, which runs the read loop. The
// Stream routes every message to the Conn on that loop (see route), so the
// engine is never handed one to dispatch.
type engine struct{}

func (engine) Handle(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}

// route takes each message on the read goroutine, in the order read. Answers
// to our calls and cancellations act at once, ahead of any queue; a request
// is registered and its handler started before the next line is read; other
// notifications are queued for the notification handler.
func (c *Conn) route(m message) {
	switch {
	case m.kind == kindResponse:
		c.deliver(&m)
	case m.kind == kindRequest:
		c.serve(&m)
	case !c.intercept(&m):
		c.notes.push(m)
	}
}

// intercept acts on the cancellations among notifications and reports
// whether m is used up; a session cancellation goes on to the application's
// handler too.
func (c *Conn) intercept(m *message) bool {
	switch {
	case m.method == MethodCancelRequest, m.method == MethodLSPCancelRequest && c.opts.AcceptLSPCancel:
		c.peerCancel(m)
		return true
	case c.isSessionCancel(m.method):
		c.cancelSession(m.sessionID)
	}
	return false
}

// serve starts a request's handler. It runs on the read goroutine and
// registers the request before anything else is read.
func (c *Conn) serve(m *message) {
	if strings.HasPrefix(m.method, "$/") || c.handler == nil {
		c.reply(errorFrame(m.id, MethodNotFound(m.method)))
		return
	}
	if c.in.len() >= c.opts.MaxInFlight {
		c.reply(errorFrame(m.id, &Error{Code: CodeInternalError,
			Message: fmt.Sprintf("Internal error: too many requests in flight (limit %d)", c.opts.MaxInFlight)}))
		return
	}
	r := c.newInRequest(m)
	if !c.in.add(r) {
		r.cancel(errRequestDone)
		c.reply(errorFrame(m.id, &Error{Code: CodeInvalidRequest,
			Message: "Invalid request: request id " + string(m.id) + " is already in flight"}))
		return
	}
	if d := c.opts.HandlerTimeout; d > 0 {
		r.mu.Lock()
		r.deadline = time.AfterFunc(d, func() { r.cancelWith(ErrDeadline) })
		r.mu.Unlock()
	}
	c.start(r)
}

func (c *Conn) newInRequest(m *message) *inRequest {
	r := &inRequest{conn: c, rawID: m.id, key: keyOf(m.id)}
	r.req = Request{ID: ID{raw: string(m.id)}, Method: m.method, Params: m.params, SessionID: m.sessionID}
	r.Context, r.cancel = context.WithCancelCause(c.base)
	return r
}

// idleWorkers are handler goroutines kept between requests. A new
// goroutine starts with a small stack, which the runtime copies each time a
// handler outgrows it (decoding JSON does); a reused one has grown already.
type idleWorkers struct {
	take    chan *inRequest // unbuffered: a send succeeds only if one waits
	waiting atomic.Int32
}

// maxIdleWorkers bounds the goroutines a connection keeps waiting.
const maxIdleWorkers = 16

// start runs r's handler on a goroutine of its own: an idle worker if one
// waits, else a new one.
func (c *Conn) start(r *inRequest) {
	select {
	case c.idle.take <- r:
	default:
		go c.work(r)
	}
}

// work runs r, then, unless enough workers wait already, waits for another
// request until the connection closes.
func (c *Conn) work(r *inRequest) {
	for {
		c.run(r)
		if c.idle.waiting.Add(1) > maxIdleWorkers {
			c.idle.waiting.Add(-1)
			return
		}
		select {
		case r = <-c.idle.take:
			c.idle.waiting.Add(-1)
		case <-c.closed:
			c.idle.waiting.Add(-1)
			return
		}
	}
}

// run calls the handler and answers with what it returns.
func (c *Conn) run(r *inRequest) {
	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
			defer func() { <-c.slots }()
		case <-r.Done():
			c.finish(r, nil, context.Cause(r))
			return
		}
	}
	result, err := c.invoke(r, &r.req)
	c.finish(r, result, err)
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
	if r.answered.Load() {
		return // answered for the handler when its grace period ran out
	}
	if err == nil {
		f, encErr := resultFrame(r.rawID, result)
		if encErr == nil {
			c.answer(r, f)
			return
		}
		err = &Error{Code: CodeInternalError, Message: "Internal error: cannot encode result: " + encErr.Error()}
	}
	if r.cancelledBy() != nil {
		c.answer(r, c.cancelledFrame(r))
		return
	}
	c.answer(r, errorFrame(r.rawID, answerFor(err)))
}

// answer sends f as r's one answer; any later attempt is dropped.
func (c *Conn) answer(r *inRequest, f *frame) {
	if !r.answered.CompareAndSwap(false, true) {
		f.release()
		return
	}
	r.stopTimers()
	c.in.remove(r) // before sending: the peer may reuse the ID once it reads the answer
	r.cancel(errRequestDone)
	c.reply(f)
}

func (c *Conn) reply(f *frame) {
	f.answer = true
	if err := c.stream.out.send(f); err != nil {
		c.log.Debug("acprpc: answer not sent", "error", err.Error())
	}
}

// handleNotification runs on the notifier's goroutine.
func (c *Conn) handleNotification(m message) {
	if c.handler == nil {
		return
	}
	// handled is written only on this goroutine, so it is read here unlocked.
	nc := &noteContext{Context: c.base, conn: c, seq: c.notes.handled + 1,
		req: Request{Method: m.method, Params: m.params, SessionID: m.sessionID}}
	if _, err := c.invoke(nc, &nc.req); err != nil {
		c.log.Debug("acprpc: notification handler failed", "method", m.method, "error", err.Error())
	}
}

// badLine answers a line that is not a usable message; the connection and
// everything in flight go on.
func (c *Conn) badLine(e *lineError) {
	c.log.Warn("acprpc: bad message from peer", "code", e.code, "error", e.msg)
	c.reply(errorFrame(e.id, &Error{Code: e.code, Message: e.msg}))
}

// overLong answers a line above the size limit, which was not kept. If its
// first bytes show an ID, the answer carries it; if they show an answer to
// one of our calls, that call fails instead.
func (c *Conn) overLong(prefix []byte, size int) {
	msg := fmt.Sprintf("Invalid request: message of %d bytes exceeds the limit of %d", size, c.opts.MaxMessageSize)
	id, isResponse := peekID(prefix)
	c.log.Warn("acprpc: over-long message from peer", "size", size, "id", string(id))
	if isResponse {
		if n, ok := parseOwnID(id); ok {
			if pc := c.out.take(n); pc != nil {
				pc.errObj = []byte(fmt.Sprintf(`{"code":%d,"message":%q}`, CodeInternalError, "response too large: "+msg))
				close(pc.done)
			}
		}
		return
	}
	c.reply(errorFrame(id, &Error{Code: CodeInvalidRequest, Message: msg}))
}

func (c *Conn) readEnded(err error) {
	c.shutdown(fmt.Errorf("%w: input ended: %w", ErrConnClosed, err))
	close(c.readDone)
}

func (c *Conn) writeFailed(err error) {
	c.shutdown(fmt.Errorf("%w: write failed: %w", ErrConnClosed, err))
}

// shutdown is the one way the connection closes, whatever the reason: every
// handler's context ends with ErrConnClosed, every pending call returns,
// queued lines get a short chance to go out, then the stream closes.
func (c *Conn) shutdown(reason error) {
	c.closeOnce.Do(func() {
		// The read loop and the parent's AfterFunc start inside NewConn and
		// can get here before it has set engine and stopParent.
		<-c.ready
		c.reason = reason
		close(c.closed)
		c.stopParent()
		c.cancelBase(ErrConnClosed)
		for _, r := range c.in.matching(func(*inRequest) bool { return true }) {
			r.stopTimers()
		}
		c.out.closeAll()
		c.notes.stop()
		c.engine.Close() // closes the Stream
	})
}

// Close closes the connection and waits for its goroutines to end. Handlers
// still running have their contexts cancelled and their answers dropped.
// Close returns promptly even when the peer has stopped reading. It is safe
// to call more than once.
func (c *Conn) Close() error {
	c.shutdown(ErrConnClosed)
	t := time.NewTimer(readerExitWait)
	defer t.Stop()
	// A notification handler may call Close itself (an "exit" notification),
	// and its goroutine cannot wait for its own end: the wait is bounded.
	select {
	case <-c.notes.done:
	case <-t.C:
		c.log.Warn("acprpc: a notification handler is still running; it ends on its own")
		return nil
	}
	// Closing a pipe or socket ends a read in progress; closing a file the
	// runtime cannot poll (a blocking stdin) does not, so that one read is
	// left to end on its own rather than holding Close.
	select {
	case <-c.readDone:
	case <-t.C:
		c.log.Warn("acprpc: the input could not be interrupted; its reader ends with its next read")
	}
	return nil
}

// readerExitWait bounds how long Close waits for the notification handler
// and the read loop to end.
const readerExitWait = time.Second

// Done is closed when the connection has closed, for any reason.
func (c *Conn) Done() <-chan struct{} { return c.closed }

// Err returns why the connection closed (matching ErrConnClosed), or nil
// while it is open.
func (c *Conn) Err() error {
	select {
	case <-c.closed:
		return c.reason
	default:
		return nil
	}
}

// Stats is a snapshot of a connection's counters.
type Stats struct {
	IncomingInFlight int    // requests from the peer not yet answered
	OutgoingInFlight int    // our requests not yet answered
	CancelsReceived  uint64 // well-formed cancels received
	CancelsSent      uint64 // $/cancel_request notifications sent
}

// Stats returns the connection's counters; it is cheap enough to poll.
func (c *Conn) Stats() Stats {
	return Stats{
		IncomingInFlight: c.in.len(),
		OutgoingInFlight: c.out.len(),
		CancelsReceived:  c.stats.cancelsReceived.Load(),
		CancelsSent:      c.stats.cancelsSent.Load(),
	}
}
