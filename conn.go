package acprpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc/internal/wire"
)

// Conn is one side of an ACP connection, agent or client alike: it serves
// the peer's requests and notifications with a Handler and makes its own
// calls. Every incoming request is answered exactly once; see the package
// documentation for the rules.
//
// Each of its tables has its own lock. The one nesting is a Work's mu over
// the work table's and the writer's locks, which orders a work's ending
// after its updates; no other lock is taken under another, and no
// application code runs under any (docs/design.md, "Locks").
type Conn struct {
	opts      Options
	log       *slog.Logger  // logs through logs, so SetLogger can change it
	logs      *loggerSwitch // the logger in force
	handler   Handler
	transport Transport
	writer    *writer

	base       context.Context // parent of every handler's context
	cancelBase context.CancelCauseFunc
	stopParent func() bool

	incoming incomingTable // the peer's requests in flight
	calls    callTable     // our requests awaiting answers
	notes    *notifier     // the peer's notifications, in order
	pool     workerPool    // goroutines that run request handlers and the notification loop
	// reader parses what is read, as the protocol set it up; only the read
	// goroutine touches it.
	reader wire.Reader
	intake intake // closed by Shutdown before its last flush
	// acp is the protocol: the engine calls it directly at a few named
	// points (docs/design.md lists them), and knows nothing else of ACP.
	acp acpRules

	answeredNotes answeredNotes // the notifications the peer was logged answering
	// notedAtRead is the last notification written when the ID-less
	// answer being routed was read, taken before the Received hook, which
	// may let its caller send another first; the read goroutine's own.
	notedAtRead string
	peerWarned  peerWarnings // the warnings the peer can cause at will, each bounded

	stats struct {
		cancelsReceived, cancelsSent atomic.Uint64
	}

	closeOnce sync.Once
	stopOnce  sync.Once
	stopping  chan struct{} // closed when Shutdown begins
	ready     chan struct{} // closed once NewConn has set every field
	closed    chan struct{}
	reason    error // why the connection closed; set before closed is closed
	readDone  chan struct{}

	// inputEnd is why the peer's input ended, once it has: the error of a
	// call no answer can reach any more, before the connection closes.
	inputEnd atomic.Pointer[error]
}

// NewConn starts serving t with h, which may be nil for a side that only
// calls (its peer's requests then get -32601). The connection closes when
// ctx ends, when Close is called, or when the peer's input ends (once the
// requests and notifications read before the end have been served, within
// Options.InputEndGrace). Handlers'
// contexts carry ctx's values, not its cancellation: they end with cause
// ErrConnClosed.
func NewConn(ctx context.Context, t Transport, h Handler, opts *Options) *Conn {
	c := &Conn{
		opts:      opts.settled(),
		handler:   h,
		transport: t,
		stopping:  make(chan struct{}),
		ready:     make(chan struct{}),
		closed:    make(chan struct{}),
		readDone:  make(chan struct{}),
	}
	c.logs = newLoggerSwitch(c.opts.Logger)
	c.log = slog.New(c.logs)
	c.base, c.cancelBase = context.WithCancelCause(context.WithoutCancel(ctx))
	c.pool.init(c.opts.MaxConcurrentRequests, c.closed)
	c.acp.init(c, h)
	if l, ok := t.(readLimiter); ok {
		l.SetReadLimit(c.opts.MaxMessageSize)
	}
	c.writer = newWriter(t, &c.opts, c.writeFailed)
	c.opts.Hooks = c.guardHooks(c.opts.Hooks)
	c.writer.sent = c.opts.Hooks.Sent
	c.writer.crowded = func() bool { return c.incoming.len()+c.calls.len() > 1 }
	c.notes = newNotifier(c.handleNotification, &c.pool)
	c.notes.limit = c.opts.MaxQueuedNotifications
	c.notes.byteLimit = c.opts.MaxQueuedNotificationBytes
	c.calls.limit = c.opts.MaxOutgoing
	go c.read()
	c.stopParent = context.AfterFunc(ctx, func() { c.closeNow(fmt.Errorf("%w: NewConn's context ended: %w", ErrConnClosed, context.Cause(ctx))) })
	close(c.ready)
	return c
}

// read is the read loop: it takes each message from the transport and
// routes it before reading the next, so the order on the wire is the order
// of registration.
func (c *Conn) read() {
	defer close(c.readDone)
	for {
		c.writer.waitRoom()
		msg, err := c.transport.Recv()
		tooLarge := asTooLarge(err)
		if err != nil && tooLarge == nil {
			c.inputEnded(err)
			return
		}
		if !c.intake.enter() {
			continue // Shutdown has taken its last message in: this one goes unread
		}
		received := false
		switch {
		case tooLarge != nil:
			c.tooLarge(tooLarge)
		case len(msg) > c.opts.MaxMessageSize: // a transport with no limit of its own
			c.tooLarge(newMessageTooLarge(msg, c.opts.MaxMessageSize))
		default:
			c.receive(msg)
			received = true
		}
		c.intake.leave()
		c.writer.inputRead()
		if received {
			c.yieldBeforeWait()
		}
	}
}

// asTooLarge returns the MessageTooLargeError in err, or nil. The variable
// errors.As fills escapes to the heap, so it is declared only once there is
// an error: the read loop allocates nothing for a message that was read.
func asTooLarge(err error) *MessageTooLargeError {
	if err == nil {
		return nil
	}
	var tooLarge *MessageTooLargeError
	if errors.As(err, &tooLarge) {
		return tooLarge
	}
	return nil
}

// inputEnded closes the connection once the peer's input has ended, why
// saying how. The end of input is the peer saying it will send nothing
// more, not that it stopped reading: what was read before it is served
// first, with the connection still open and the handlers' contexts live,
// for at most Options.InputEndGrace. The notifications are handled, so the
// answers that came behind them reach their callers after them; the
// requests are answered, by their handlers, or as cancelled once the bound
// has passed, unless the peer is gone. This side's calls end at once, as
// no answer can come.
func (c *Conn) inputEnded(why error) {
	reason := fmt.Errorf("%w by the peer: its output ended: %w", ErrConnClosed, why)
	c.inputEnd.Store(&reason)
	c.calls.closeAll()
	grace, stop := context.WithTimeout(context.Background(), c.opts.InputEndGrace)
	defer stop()
	c.notes.waitFor(c.notes.barrier(), grace.Done(), nil)
	if !peerGone(why) {
		c.answerAll(grace, reason)
	}
	c.closeNow(reason)
}

// inputEndRanOut answers a request whose handler has not returned within
// Options.InputEndGrace of the end of the peer's input, its context ending
// with reason, and says so: the handler's own answer will be dropped.
func (c *Conn) inputEndRanOut(r *inRequest, reason error) {
	r.atInputEnd.Store(true)
	r.cancelWith(reason)
	if !c.answer(r, c.cancelledFrame(r.rawID, r.req.Method)) {
		return // the handler returned meanwhile
	}
	c.log.Warn("acprpc: the peer's input ended with a request in flight whose handler still runs after Options.InputEndGrace, so it was answered cancelled for it and its own answer will be dropped; return from the handler sooner, or raise the bound",
		"method", r.req.Method, "id", r.req.ID.String(), "grace", c.opts.InputEndGrace.String())
}

// peerGone reports whether why, the end of the peer's input, says that the
// peer reads nothing more either (see Transport's Recv): no answer could
// reach it.
func peerGone(why error) bool {
	var gone interface{ PeerGone() bool }
	return errors.As(why, &gone) && gone.PeerGone()
}

// answerAll waits until every request in flight is answered, or until
// grace ends, and then answers those left as cancelled, their contexts
// ending with reason, which closes the connection next: every request
// read has its answer queued before the close.
func (c *Conn) answerAll(grace context.Context, reason error) {
	select {
	case <-c.incoming.emptied():
		return
	case <-grace.Done():
	case <-c.closed:
		return
	}
	for _, r := range c.incoming.all() {
		c.inputEndRanOut(r, reason)
	}
	// An answer that was under way as the bound passed is queued in a
	// moment: its request had left the table already.
	queued, stop := context.WithTimeout(context.Background(), closeFlushTimeout)
	defer stop()
	select {
	case <-c.incoming.emptied():
	case <-queued.Done():
	case <-c.closed:
	}
}

// yieldBeforeWait lets the goroutine a message woke (its handler, the
// notification goroutine, the caller it answers) run on this thread before
// the read loop waits for more input in a system call that holds the thread
// and its processor, as a read of a blocking stdin does. Without it the woken
// goroutine would wait on that processor for another thread to wake and take
// it: tens of microseconds on every round trip of an agent over stdio. A
// wait that parks in the runtime's poller frees the processor by itself, and
// input already buffered is read at once, so neither yields.
func (c *Conn) yieldBeforeWait() {
	if t, ok := c.transport.(threadHolder); ok && t.recvHoldsThread() {
		runtime.Gosched()
	}
}

// receive parses one message and routes it, or answers it when it is not a
// usable message; the connection and everything in flight go on.
func (c *Conn) receive(msg []byte) {
	m, bad := c.reader.Read(msg)
	if m.ID == nil && m.Error != nil {
		c.notedAtRead = c.writer.notified.last()
	}
	if c.opts.Hooks.Received != nil {
		c.received(msg, &m, bad)
	}
	if bad != nil {
		c.badMessage(bad, msg)
		return
	}
	c.route(m)
}

// message is one parsed message; see wire.Reader.
type message = wire.Message

// route sends each message down one of four ways, on the read goroutine in
// the order read: answers to our calls (deliver); what the protocol acts on
// at once, such as cancels (acp.read); then the tracker and serving for a
// request (serve) or the notification queue. Answers and cancels act at
// once, ahead of any queue; a request is registered and its handler started
// before the next message is read. m is passed by value so that it stays on
// the read goroutine's stack.
func (c *Conn) route(m message) {
	if m.Kind == wire.Response {
		c.deliver(&m)
		return
	}
	needs, used := c.acp.read(&m)
	switch {
	case used:
	case m.Kind == wire.Request:
		c.serve(&m, needs)
	default:
		c.notes.push(m)
	}
}

// tooLarge answers a message above the size limit, which was not kept.
// The answer carries its ID, wherever in the message the ID was; if the
// message answers one of our calls, that call fails instead, and an answer
// is never answered.
func (c *Conn) tooLarge(e *MessageTooLargeError) {
	if c.opts.Hooks.Received != nil {
		c.opts.Hooks.Received(c.base, &Message{Kind: KindInvalid, Raw: e.Prefix, Size: e.Size})
	}
	msg := fmt.Sprintf("Invalid request: message of %d bytes exceeds the limit of %d", e.Size, c.opts.MaxMessageSize)
	id, isResponse := e.envelope()
	c.log.Warn("acprpc: over-long message from peer", "size", e.Size, "id", string(id), "response", isResponse)
	if isResponse {
		if id != nil {
			c.failCall(id, &Error{Code: CodeInternalError, Message: "response too large: " + msg})
		}
		return
	}
	c.replyOwn("", errorFrame(id, &Error{Code: CodeInvalidRequest, Message: msg}))
}

// writeFailed closes the connection after a write failed or the writer
// refused a message. A sender that was refused calls it too, though the
// writer reports a failure on another goroutine: a handler told
// ErrConnClosed then finds its own context ended with it, so the request is
// known to be cut short by the close, not answered with an error.
func (c *Conn) writeFailed(err error) {
	c.closeNow(fmt.Errorf("%w: a write to the peer failed: %w", ErrConnClosed, err))
}

// closeNow is the one way the connection closes, whatever the reason: every
// handler's context ends with ErrConnClosed, every pending call returns,
// queued messages get a short chance to go out, then the transport closes.
// It never waits on the peer for longer than closeFlushTimeout.
func (c *Conn) closeNow(reason error) {
	flush, stop := context.WithTimeout(context.Background(), closeFlushTimeout)
	defer stop()
	c.closeFlushing(reason, flush)
}

// closeFlushing closes the connection, giving queued messages until flush
// ends to go out.
func (c *Conn) closeFlushing(reason error, flush context.Context) {
	c.closeOnce.Do(func() {
		// The read loop and the parent's AfterFunc start inside NewConn and
		// can get here before it has set stopParent.
		<-c.ready
		c.reason = reason
		close(c.closed)
		c.stopParent()
		c.cancelBase(ErrConnClosed)
		for _, r := range c.incoming.all() { // their handlers' answers are dropped
			r.stopTimers()
		}
		c.calls.closeAll()
		c.notes.stop()
		c.writer.drain(flush)
		if err := c.transport.Close(); err != nil {
			c.log.Debug("acprpc: closing the transport", "error", err.Error())
		}
		c.writer.stop()
	})
}

// closeFlushTimeout bounds how long closing waits for queued messages to be
// taken by a peer that may have stopped reading.
const closeFlushTimeout = 250 * time.Millisecond

// Close closes the connection and waits for its goroutines to end. Handlers
// still running have their contexts cancelled and their answers dropped. A
// client's session/prompt calls in flight have their turns cancelled: the
// agent is sent session/cancel for each of their sessions, queued ahead of
// the close, so that an agent that outlives the connection (a remote one)
// does not run on. What was queued for the peer before the close is written
// first, for up to a quarter of a second, and the transport closed: after
// Done, Close is the wait for that last flush. A failed write ends it at once.
// Close returns promptly whatever the peer and the transport do: a write
// stuck on a peer that stopped reading, or a read of a file that cannot be
// interrupted (a blocking stdin), is left to end on its own. It is safe to
// call more than once, from any goroutine, a handler's included.
func (c *Conn) Close() error {
	c.acp.closing() // a client's turns in flight are cancelled, not left running
	c.closeNow(errClosedHere)
	t := time.NewTimer(readerExitWait)
	defer t.Stop()
	// A notification handler may call Close itself (an "exit" notification),
	// and its goroutine cannot wait for its own end: the wait is bounded.
	select {
	case <-c.notes.done:
	case <-t.C:
		c.log.Debug("acprpc: a notification handler is still running; it ends on its own")
		return nil
	}
	if t, ok := c.transport.(interruptor); ok && !t.interruptible() {
		return nil // the read and write in progress end on their own; no one can cut them short
	}
	for _, done := range []chan struct{}{c.readDone, c.writer.done} {
		select {
		case <-done:
		case <-t.C:
			c.log.Debug("acprpc: the transport did not end a read or write on close; it ends on its own")
			return nil
		}
	}
	return nil
}

// errClosedHere is why a connection that Close closed is closed.
var errClosedHere = fmt.Errorf("%w by this side (Close)", ErrConnClosed)

// readerExitWait bounds how long Close waits for the notification handler
// and the read loop to end.
const readerExitWait = time.Second

// Done is closed when the connection has closed, for any reason: every
// handler's context has ended, every Call returns, and nothing more is
// read, served or queued. What was queued for the peer before then is still
// being written: the answers of the requests read before the peer's input
// ended (see Options.InputEndGrace), cancellation answers, this side's last
// notifications, for up to a quarter of a second if the peer has stopped
// reading; then the transport closes. Close waits for both: a program that
// exits once Done fires calls Close first, as Serve does.
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
	CancelsSent      uint64 // cancels sent for this side's calls: $/cancel_request, or session/cancel for a prompt's turn
	// UnsentNotifications and UnsentNotificationBytes are this side's
	// notifications queued by Notify and not yet written, and their bytes:
	// at most Options.MaxUnsentNotifications and MaxUnsentNotificationBytes,
	// plus one message for each goroutine in Notify at once.
	UnsentNotifications     int
	UnsentNotificationBytes int
}

// Stats returns the connection's counters; it is cheap enough to poll.
func (c *Conn) Stats() Stats {
	notes, noteBytes := c.writer.unsent()
	return Stats{
		UnsentNotifications:     notes,
		UnsentNotificationBytes: noteBytes,
		IncomingInFlight:        c.incoming.len(),
		OutgoingInFlight:        c.calls.len(),
		CancelsReceived:         c.stats.cancelsReceived.Load(),
		CancelsSent:             c.stats.cancelsSent.Load(),
	}
}

// signal is a channel made only once someone waits on it, and closed and
// forgotten when what they wait for happens, so that a table with no one
// waiting allocates nothing. The lock of the struct that holds it protects
// it: wait and fire are called with that lock held.
type signal struct{ ch chan struct{} }

// wait returns a channel closed by the next fire.
func (s *signal) wait() <-chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// fire wakes everyone waiting, if anyone is.
func (s *signal) fire() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// closedChan is a channel that is always ready.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
