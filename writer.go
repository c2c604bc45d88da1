package acprpc

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc/internal/wire"
)

// writer owns the write side of a connection. One sender at a time holds
// it. A message that finds it free with nothing queued is written by its
// sender, on the sender's goroutine, when the transport can try a write that
// never waits for the peer (a Stream over a polled descriptor, a Pipe):
// what the peer has no room for stays with the transport. Every other
// message is queued, and a writer goroutine hands the queue to the
// transport in order and flushes once it runs dry, so that a burst shares a
// write. That goroutine runs only while there is something to write, and a
// peer that stops reading blocks nobody but it.
type writer struct {
	transport  Transport
	flush      func() error                             // the transport's Flush, or nil
	sendNote   func([]byte, func(n, size int)) error    // the transport's SendNotification, or nil
	noteGone   func(n, size int)                        // w.notesWritten, made once: what sendNote is given
	try        func([]byte) (unflushed bool, err error) // the transport's trySend, or nil
	limit      int                                      // queued answer bytes above which the reader waits
	noteLimit  int                                      // this side's notifications queued before Notify waits
	noteBytes  int                                      // their bytes before Notify waits
	failed     func(error)                              // told once when a write fails
	sent       func(context.Context, *Message)          // Hooks.Sent, or nil
	runQueue   func()                                   // w.run, made once: starting the goroutine allocates nothing
	crowded    func() bool                              // more than one request in flight either way, or nil
	notified   lastNotified                             // the last notification written
	unread     func() bool                              // the transport's inputWaiting, or nil
	unreadWait time.Duration                            // Options.UnreadInputWait
	// inputFirst holds notifications back while the peer's input waits
	// unread: the writer sets it after a batch, the reader clears it.
	inputFirst atomic.Bool
	probed     time.Time // when the writer last asked unread; the writer's own
	yielded    time.Time // when the writer last yielded; the writer's own

	mu        sync.Mutex // protects the fields below
	queued    int        // bytes of answers queued and not yet written
	notes     int        // this side's notifications queued and not yet written
	notesSize int        // their bytes
	room      signal     // fired when queued or notes drops: the reader's wait (waitRoom)
	// noteWaiters are the Notify calls waiting for room, in the order they
	// came; roomMade wakes as many as there is room for (noteroom.go).
	noteWaiters []chan struct{}
	queue       []*frame
	spare       []*frame
	busy        bool // a sender or the writer goroutine holds the write side
	unflushed   bool // the transport holds bytes a try could not write
	closing     bool
	err         error
	stopped     bool          // done is closed
	done        chan struct{} // closed once the writer has stopped and no write is in progress
}

// maxTryWrite is the largest message a sender writes itself: a larger one
// seldom fits what the peer has room for at once.
const maxTryWrite = 32 << 10

func newWriter(t Transport, o *Options, failed func(error)) *writer {
	w := &writer{
		transport: t,
		limit:     o.MaxQueuedWrite,
		noteLimit: o.MaxUnsentNotifications,
		noteBytes: o.MaxUnsentNotificationBytes,
		failed:    failed,
		done:      make(chan struct{}),
	}
	w.runQueue = w.run
	if f, ok := t.(flusher); ok {
		w.flush = f.Flush
	}
	if q, ok := t.(noteQueuer); ok {
		w.sendNote, w.noteGone = q.SendNotification, w.notesWritten
	}
	if p, ok := t.(inputProber); ok && o.UnreadInputWait > 0 {
		w.unread, w.unreadWait = p.inputWaiting, o.UnreadInputWait
	}
	if ts, ok := t.(trySender); ok && ts.canTrySend() {
		w.try = ts.trySend
	}
	return w
}

// send queues f behind everything sent before it, or returns the writer's
// error if it has stopped.
func (w *writer) send(f *frame) error { return w.put(f, false) }

// sendNow is send for a message its sender follows with nothing else at
// once (a request it waits on, an answer, a cancel): when the write side is
// free and nothing is queued, the sender writes it itself, sparing the
// hand-off to the writer goroutine, without ever waiting for the peer. A
// burst of notifications uses send instead, and goes out in one write.
func (w *writer) sendNow(f *frame) error { return w.put(f, true) }

func (w *writer) put(f *frame, now bool) error {
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		f.release()
		return err
	}
	if f.queued != nil {
		f.queued.Store(true)
	}
	if now && w.try != nil && !w.busy && len(w.queue) == 0 && f.Buf.Len() <= maxTryWrite {
		w.busy = true
		w.mu.Unlock()
		w.writeNow(f)
		return nil
	}
	w.queue = append(w.queue, f)
	switch {
	case f.answer:
		w.queued += f.Buf.Len()
	case f.note:
		w.notes++
		w.notesSize += f.Buf.Len()
	}
	if !w.busy {
		w.busy = true
		go w.runQueue()
	}
	w.mu.Unlock()
	return nil
}

// writeNow writes f on the sender's goroutine, which holds the write side,
// then lets go of it.
func (w *writer) writeNow(f *frame) {
	if w.sent != nil {
		w.sent(f.info.ctx, f.message())
	}
	w.notified.wrote(f)
	unflushed, err := w.try(f.Buf.Bytes())
	f.release()
	if err != nil {
		w.fail(err)
	}
	w.mu.Lock()
	w.unflushed = unflushed
	w.letGo()
	w.mu.Unlock()
}

// letGo ends a turn at the write side; w.mu is held. If more waits to be
// written, the writer goroutine takes the write side over. Otherwise it is
// free, and once the writer has stopped, or is closing with nothing left,
// it is done.
func (w *writer) letGo() {
	if w.err == nil && (w.unflushed || len(w.queue) > 0) {
		go w.runQueue()
		return
	}
	w.busy = false
	if w.err != nil || w.closing {
		w.finish()
	}
}

// run is the writer goroutine: it writes the queue, batch after batch, and
// ends when nothing is left to write.
func (w *writer) run() {
	// Let the goroutines that are ready to run go first: in a burst (a
	// thousand turns cancelled at once, each sending its $/cancel_request)
	// they queue behind this message, and go out with it in one write
	// instead of one write each. With nothing else to run, it costs a
	// trip through the scheduler and a thread woken for nothing, so a
	// connection with at most one request in flight either way, whose
	// answer or call this is, does not yield.
	if w.crowded == nil || w.crowded() {
		runtime.Gosched()
	}
	for {
		w.mu.Lock()
		if w.err != nil || (!w.unflushed && len(w.queue) == 0) {
			w.letGo()
			w.mu.Unlock()
			return
		}
		batch := w.queue
		w.queue, w.spare, w.unflushed = w.spare[:0], nil, false
		w.mu.Unlock()
		if err := w.write(batch); err != nil {
			w.fail(err)
		}
		w.yieldNow()
	}
}

// yieldNow lets the other goroutines that are ready run, at most once every
// yieldEvery of writing batch after batch. A turn streaming updates and the
// writer hand the processor to each other directly, and such hand-offs go
// on in one time slice of the scheduler's, up to 10 ms, ahead of every
// goroutine waiting for a processor: the read goroutine, woken from a
// blocking stdin's read with the peer's session/cancel, waited for it 3 to
// 4 ms at p99 while the stream ran on (docs/benchmarks.md, "The stop under
// the stream").
func (w *writer) yieldNow() {
	if now := time.Now(); now.Sub(w.yielded) >= yieldEvery {
		w.yielded = now
		runtime.Gosched()
	}
}

// yieldEvery is the least time between two of yieldNow's yields.
const yieldEvery = 100 * time.Microsecond

// write hands a batch to the transport and flushes it. After a failure the
// rest of the batch is dropped. A notification handed to a transport that
// queues it (sendNote) stays counted until the transport says it is
// written (notesWritten).
func (w *writer) write(batch []*frame) error {
	var err error
	written, notes, notesSize := 0, 0, 0
	for i, f := range batch {
		queuedOn := f.note && w.sendNote != nil
		if err == nil {
			if w.sent != nil {
				w.sent(f.info.ctx, f.message())
			}
			w.notified.wrote(f)
			if queuedOn {
				err = w.sendNote(f.Buf.Bytes(), w.noteGone)
			} else {
				err = w.transport.Send(f.Buf.Bytes())
			}
		}
		switch {
		case f.answer:
			written += f.Buf.Len()
		case f.note && (!queuedOn || err != nil):
			notes++
			notesSize += f.Buf.Len()
		}
		f.release()
		batch[i] = nil
	}
	if err == nil && w.flush != nil {
		err = w.flush()
	}
	// The peer's input found waiting holds the next notifications back
	// until the reader has taken it in (inputRead), the one to clear it.
	inputFirst := notes > 0 && err == nil && w.peerWrote()
	w.mu.Lock()
	if inputFirst {
		w.inputFirst.Store(true)
	}
	w.spare = batch[:0]
	w.queued -= written
	w.notes -= notes
	w.notesSize -= notesSize
	w.roomMade()
	w.mu.Unlock()
	return err
}

// notesWritten is told by a transport that queues this side's
// notifications (SendNotification) that n of them, of size bytes in all,
// have left its queue for the network: room for as many. Once the writer
// has stopped, the counts were dropped with the queue.
func (w *writer) notesWritten(n, size int) {
	w.mu.Lock()
	if w.err == nil {
		w.notes -= n
		w.notesSize -= size
		w.roomMade()
	}
	w.mu.Unlock()
}

// waitRoom holds the reader while more than the limit of answers waits to
// be written: a peer that sends requests without reading our answers is
// slowed down, not fed memory. Our own requests and notifications do not
// count: holding the reader for them would stop it reading the answers that
// retire them, and calls to a peer that answers in kind would stop both
// sides for good once they passed the limit. It returns at once when the
// writer has stopped.
func (w *writer) waitRoom() {
	w.mu.Lock()
	for w.limit > 0 && w.queued > w.limit && w.err == nil {
		room := w.room.wait()
		w.mu.Unlock()
		<-room
		w.mu.Lock()
	}
	w.mu.Unlock()
}

// unsent returns the number and bytes of this side's notifications
// queued and not yet written.
func (w *writer) unsent() (int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.notes, 0), max(w.notesSize, 0) // a batch written after a failure dropped the queue counts down past it
}

// fail stops the writer for good after a failed write and drops what is
// still queued. A failure while the connection is open is reported, on
// another goroutine, since closing the connection waits for this one.
func (w *writer) fail(err error) {
	w.mu.Lock()
	first := w.err == nil
	if first {
		w.err = err
	}
	closing := w.closing
	w.dropQueue()
	w.mu.Unlock()
	if first && !closing {
		go w.failed(err)
	}
}

// dropQueue releases every queued frame; w.mu is held.
func (w *writer) dropQueue() {
	for i, f := range w.queue {
		f.release()
		w.queue[i] = nil
	}
	w.queue = w.queue[:0]
	w.queued, w.notes, w.notesSize = 0, 0, 0
	w.roomMade()
}

// finish stops the writer for good once no write is in progress; w.mu is
// held and the write side is free.
func (w *writer) finish() {
	if w.err == nil {
		w.err = ErrConnClosed
	}
	w.dropQueue()
	if !w.stopped {
		w.stopped = true
		close(w.done)
	}
}

// drain asks the writer to finish the queue and stop, waiting until ctx
// ends at most: a peer that stopped reading cannot hold the close.
func (w *writer) drain(ctx context.Context) {
	w.mu.Lock()
	w.closing = true
	if !w.busy {
		w.finish() // nothing is queued: a queue always has a holder
	}
	w.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
	}
}

// stop refuses every later send and drops the queue. A write in progress
// ends once the transport returns, which closing the transport brings about
// for every transport that can be interrupted; done is closed then.
func (w *writer) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.busy {
		w.finish()
		return
	}
	if w.err == nil {
		w.err = ErrConnClosed
	}
	w.dropQueue()
}

// frame is one outgoing message, built by wire.Frame, with what the writer
// and the Sent hook need of it. Frames are pooled: the writer returns each
// to the pool once the transport has taken its bytes.
type frame struct {
	wire.Frame
	answer bool // an answer to the peer: counts against the writer's limit
	note   bool // a notification sent by Notify: counts against the notifications' limits
	info   frameInfo
	// queued, when set, is stored true under the writer's lock as the frame
	// takes its place on the wire: a message queued later (a session/cancel)
	// is written after it.
	queued *atomic.Bool
}

// maxPooledFrame keeps a rare huge message from pinning its buffer.
const maxPooledFrame = 64 << 10

var framePool = sync.Pool{New: func() any { return &frame{} }}

func getFrame() *frame { return framePool.Get().(*frame) }

func (f *frame) release() {
	if f.Buf.Cap() > maxPooledFrame {
		return
	}
	f.Reset()
	f.answer, f.note = false, false
	f.info = frameInfo{}
	f.queued = nil
	framePool.Put(f)
}

// requestFrame builds a request (id set) or notification line.
func requestFrame(id []byte, method string, params any) (*frame, error) {
	f := getFrame()
	f.info.kind, f.info.method = KindRequest, method
	if id == nil {
		f.info.kind = KindNotification
	}
	if err := f.Request(id, method, params); err != nil {
		f.release()
		return nil, err
	}
	return f, nil
}

// resultFrame builds a success answer.
func resultFrame(id []byte, result any) (*frame, error) {
	f := getFrame()
	f.info.kind = KindResult
	if err := f.Result(id, result); err != nil {
		f.release()
		return nil, err
	}
	return f, nil
}

// errorFrame builds an error answer; a nil id is written as null, as
// JSON-RPC requires when the request's ID could not be read.
func errorFrame(id []byte, e *Error) *frame {
	f := getFrame()
	f.info.kind, f.info.err = KindError, e
	if f.ErrorAnswer(id, e) != nil { // only Data can fail; drop it
		f.release()
		return errorFrame(id, &Error{Code: e.Code, Message: e.Message})
	}
	return f
}
