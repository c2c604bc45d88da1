package acprpc

import (
	"context"
	"sync"
	"time"
)

// notifier runs notification handlers one at a time, in arrival order, on a
// goroutine of its own, so a slow notification delays later notifications
// but never the read loop, cancellations or requests. The loop runs only
// while notifications are queued, on a worker of the connection's pool (one
// whose stack has grown already, not a new goroutine for each burst): an
// idle connection has none. It also counts what it has handled, which lets
// a response wait for the notifications read before it (see barrier).
type notifier struct {
	limit     int // queued notifications before the reader waits; set before the connection starts
	byteLimit int // queued bytes before the reader waits; likewise

	mu      sync.Mutex // protects the fields below
	room    signal     // fired when the queue shrinks, or may grow
	queue   []message  // queue[head:] waits; the slice is reused, so a steady trickle allocates nothing
	head    int
	bytes   int // the sizes of the queued messages
	callers int // Calls made by the notification handler, with its context, not yet returned
	queued  uint64
	handled uint64
	// reached holds, for each count that someone waits for and handled has
	// not reached, a channel closed once it does: each waiter wakes once,
	// at its own count, not at every notification handled before it, which
	// for answers queued behind a burst of notifications is a wake-up per
	// waiter per notification.
	reached map[uint64]chan struct{}
	running bool // the goroutine runs handlers
	ended   bool // stopped and done closed

	handle  func(message) // set before the connection starts
	pool    *workerPool   // runs the loop
	stopped chan struct{} // closed by stop
	done    chan struct{} // closed once stopped with no handler running
}

func newNotifier(handle func(message), pool *workerPool) *notifier {
	return &notifier{
		handle:  handle,
		pool:    pool,
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// keptQueue is the longest queue slice a notifier keeps once it is empty
// (1,024 messages, 160 KiB): a flood's next burst reuses it, and a longer
// one is let go.
const keptQueue = 1024

// overflow is how many times its bounds the queue may grow to while the
// notification handler waits for an answer, which may be behind the
// notifications that fill it.
const overflow = 4

// push queues m; it runs on the read goroutine, which waits while the queue
// is full, so a flood slows the peer down instead of growing without end.
func (n *notifier) push(m message) {
	n.mu.Lock()
	for n.full(m.Size) {
		room := n.room.wait()
		n.mu.Unlock()
		select {
		case <-room:
		case <-n.stopped:
			return
		}
		n.mu.Lock()
	}
	n.enqueue(m)
	n.bytes += m.Size
	n.queued++
	if !n.running {
		n.running = true
		n.pool.start(n)
	}
	n.mu.Unlock()
}

// pending is the number of queued notifications; n.mu is held.
func (n *notifier) pending() int { return len(n.queue) - n.head }

// enqueue appends m to the queue; n.mu is held. A full slice whose front
// half has been handled is compacted rather than grown, so the slice stays
// within a few times what waits.
func (n *notifier) enqueue(m message) {
	if len(n.queue) == cap(n.queue) && n.head > 0 && n.head >= len(n.queue)/2 {
		k := copy(n.queue, n.queue[n.head:])
		clear(n.queue[k:])
		n.queue, n.head = n.queue[:k], 0
	}
	n.queue = append(n.queue, m)
}

// full reports whether a message of size must wait for room; n.mu is held.
// An empty queue always has room, so that a message of any allowed size
// gets through. While the handler waits for one of its calls, the bounds
// are raised: its answer may be behind what fills the queue, and only the
// reader, reading on, can reach it.
func (n *notifier) full(size int) bool {
	if n.pending() == 0 || n.limit <= 0 {
		return false
	}
	limit, byteLimit := n.limit, n.byteLimit
	if n.callers > 0 {
		limit, byteLimit = limit*overflow, byteLimit*overflow
	}
	return n.pending() >= limit || byteLimit > 0 && n.bytes+size > byteLimit
}

// callStarted and callEnded bracket a Call made by the notification
// handler with its context. The reader, if it waits for room, looks again:
// the queue may now grow further.
func (n *notifier) callStarted() {
	n.mu.Lock()
	n.callers++
	n.room.fire()
	n.mu.Unlock()
}

func (n *notifier) callEnded() {
	n.mu.Lock()
	n.callers--
	n.mu.Unlock()
}

// barrier is the count a response read now must wait for: every
// notification read before it.
func (n *notifier) barrier() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.queued
}

// waitFor returns once target notifications have been handled, the
// notifier has stopped, giveUp is closed or timeout fires (either may be
// nil). It reports whether they were all handled.
func (n *notifier) waitFor(target uint64, giveUp <-chan struct{}, timeout <-chan time.Time) bool {
	n.mu.Lock()
	if n.handled >= target {
		n.mu.Unlock()
		return true
	}
	reached := n.reachedChan(target)
	n.mu.Unlock()
	select {
	case <-reached:
		return true
	case <-n.stopped:
	case <-giveUp:
	case <-timeout:
	}
	return false
}

// reachedChan returns the channel closed once handled reaches target, which
// it has not yet; n.mu is held. A waiter that gives up leaves it in place:
// the count it waited for is one already queued, which the loop reaches.
func (n *notifier) reachedChan(target uint64) <-chan struct{} {
	ch := n.reached[target]
	if ch == nil {
		if n.reached == nil {
			n.reached = make(map[uint64]chan struct{})
		}
		ch = make(chan struct{})
		n.reached[target] = ch
	}
	return ch
}

// run is the notification loop: it handles the queue and returns once the
// queue is empty or the notifier has stopped.
func (n *notifier) run() {
	for {
		m, ok := n.next()
		if !ok {
			return
		}
		n.handle(m)
		n.mu.Lock()
		n.handled++ // and those who waited for this count wake
		if ch, ok := n.reached[n.handled]; ok {
			close(ch)
			delete(n.reached, n.handled)
		}
		n.mu.Unlock()
	}
}

// next takes the next notification, or reports that the goroutine is done:
// the queue is empty, or the notifier has stopped.
func (n *notifier) next() (message, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.stopped:
		n.running = false
		n.end()
		return message{}, false
	default:
	}
	if n.pending() == 0 {
		n.running = false
		return message{}, false
	}
	m := n.queue[n.head]
	n.queue[n.head] = message{} // the handled message's bytes are not kept
	n.head++
	if n.head == len(n.queue) {
		n.queue, n.head = n.queue[:0], 0
		if cap(n.queue) > keptQueue {
			n.queue = nil // what a flood grew goes; an idle connection stays small
		}
	}
	n.bytes -= m.Size
	n.room.fire()
	return m, true
}

// stop ends the notifier after the notification being handled; the rest of
// the queue is dropped with the connection.
func (n *notifier) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.stopped)
	if !n.running {
		n.end()
	}
}

// end closes done, once; n.mu is held.
func (n *notifier) end() {
	if !n.ended {
		n.ended = true
		close(n.done)
	}
}

// handleNotification runs on the notification goroutine.
func (c *Conn) handleNotification(m message) {
	if c.handler == nil {
		return
	}
	// handled is written only by the goroutine that runs handlers, one at a
	// time, each started after the last one's writes: it is read unlocked.
	nc := &noteContext{Context: c.base, conn: c, seq: c.notes.handled + 1,
		req: Request{Method: m.Method, Params: m.Params, SessionID: m.Scope, read: m.Params}}
	if _, err := c.invoke(c.handlerContext(nc, &nc.req, noteKey), &nc.req); err != nil {
		c.log.Debug("acprpc: notification handler failed", "method", m.Method, "error", err.Error())
	}
}

// noteContext is the context of a notification handler: the connection's
// context, with the accessors answering. It holds the Request too, so the
// two cost one allocation.
type noteContext struct {
	context.Context
	conn *Conn
	req  Request
	seq  uint64 // this notification's place in the arrival order, from 1
}

func (n *noteContext) Value(key any) any {
	switch key {
	case requestKey:
		return &n.req
	case connKey:
		return n.conn
	case noteKey:
		return n
	}
	return n.Context.Value(key)
}
