package acprpc

import (
	"context"
	"errors"
	"sync"
)

// writer owns the write side of a connection: senders queue frames and
// return at once; one goroutine hands them to the transport in order and
// flushes when the queue runs dry, so bursts share a system call and a stuck
// peer blocks nobody but the writer.
type writer struct {
	transport Transport
	flush     func() error                    // the transport's Flush, or nil
	limit     int                             // queued answer bytes above which the reader waits
	failed    func(error)                     // told once when a write fails
	sent      func(context.Context, *Message) // Hooks.Sent, or nil

	mu      sync.Mutex    // protects the fields below
	queued  int           // bytes of answers queued and not yet written
	room    chan struct{} // closed when queued drops, if the reader waits
	queue   []*frame
	spare   []*frame
	closing bool
	err     error

	wake    chan struct{} // a token: the queue may have grown
	done    chan struct{} // closed when run returns
	started sync.Once
}

// errWriterClosed is the writer's reason once it has stopped.
var errWriterClosed = errors.New("acprpc: connection closed")

func newWriter(t Transport, limit int, failed func(error)) *writer {
	w := &writer{
		transport: t,
		limit:     limit,
		failed:    failed,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if f, ok := t.(flusher); ok {
		w.flush = f.Flush
	}
	return w
}

// send queues f, or returns the writer's error if it has stopped.
func (w *writer) send(f *frame) error {
	w.started.Do(func() { go w.run() })
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		f.release()
		return err
	}
	w.queue = append(w.queue, f)
	if f.answer {
		w.queued += f.buf.Len()
	}
	w.mu.Unlock()
	w.signal()
	return nil
}

func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *writer) run() {
	defer close(w.done)
	for {
		batch, closing := w.next()
		err := w.write(batch)
		if err == nil && closing {
			err = errWriterClosed
		}
		if err != nil {
			w.fail(err)
			return
		}
	}
}

// next waits for frames, or for the order to stop once the queue is empty.
func (w *writer) next() (batch []*frame, closing bool) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 || w.closing {
			batch, w.queue, w.spare = w.queue, w.spare[:0], nil
			closing = w.closing && len(batch) == 0
			w.mu.Unlock()
			return batch, closing
		}
		w.mu.Unlock()
		<-w.wake
	}
}

// write hands a batch to the transport and flushes it. After a failure the
// rest of the batch is dropped.
func (w *writer) write(batch []*frame) error {
	var err error
	written := 0
	for i, f := range batch {
		if err == nil {
			if w.sent != nil {
				w.sent(f.info.ctx, f.message())
			}
			err = w.transport.Send(f.buf.Bytes())
		}
		if f.answer {
			written += f.buf.Len()
		}
		f.release()
		batch[i] = nil
	}
	if err == nil && w.flush != nil && len(batch) > 0 {
		err = w.flush()
	}
	w.mu.Lock()
	w.spare = batch[:0]
	w.queued -= written
	w.openRoom()
	w.mu.Unlock()
	return err
}

// openRoom wakes a reader waiting for room; w.mu is held.
func (w *writer) openRoom() {
	if w.room != nil {
		close(w.room)
		w.room = nil
	}
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
		if w.room == nil {
			w.room = make(chan struct{})
		}
		room := w.room
		w.mu.Unlock()
		<-room
		w.mu.Lock()
	}
	w.mu.Unlock()
}

// fail stops the writer for good and drops what is still queued. A failure
// while the connection is open is reported, on another goroutine, since
// closing the connection waits for this one.
func (w *writer) fail(err error) {
	w.mu.Lock()
	first := w.err == nil
	if first {
		w.err = err
	}
	closing := w.closing
	dropped := w.queue
	w.queue = nil
	w.openRoom()
	w.mu.Unlock()
	for _, f := range dropped {
		f.release()
	}
	if first && err != errWriterClosed && !closing {
		go w.failed(err)
	}
}

// drain asks the writer to finish the queue and stop, waiting until ctx
// ends at most: a peer that stopped reading cannot hold the close.
func (w *writer) drain(ctx context.Context) {
	w.started.Do(func() { go w.run() })
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.signal()
	select {
	case <-w.done:
	case <-ctx.Done():
	}
}

// stop refuses every later send. The writer goroutine itself ends once its
// write in progress returns, which closing the transport brings about for
// every transport that can be interrupted.
func (w *writer) stop() {
	w.mu.Lock()
	if w.err == nil {
		w.err = errWriterClosed
	}
	dropped := w.queue
	w.queue = nil
	w.openRoom()
	w.mu.Unlock()
	for _, f := range dropped {
		f.release()
	}
	w.signal()
}
