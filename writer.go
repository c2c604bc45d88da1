package acprpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"
)

// frame is one outgoing line. Frames are pooled: the writer returns each to
// the pool once its bytes are written.
type frame struct {
	buf    bytes.Buffer
	enc    *json.Encoder
	answer bool // an answer to the peer: counts against the writer's limit
}

// maxPooledFrame keeps a rare huge message from pinning its buffer.
const maxPooledFrame = 64 << 10

var framePool = sync.Pool{New: func() any {
	f := &frame{}
	f.enc = json.NewEncoder(&f.buf)
	f.enc.SetEscapeHTML(false) // params and results go out as the caller wrote them
	return f
}}

func getFrame() *frame { return framePool.Get().(*frame) }

func (f *frame) release() {
	if f.buf.Cap() > maxPooledFrame {
		return
	}
	f.buf.Reset()
	f.answer = false
	framePool.Put(f)
}

// encode appends v as JSON, without the encoder's trailing newline.
func (f *frame) encode(v any) error {
	if raw, ok := v.(json.RawMessage); ok && raw != nil {
		f.buf.Write(raw) // already checked by the caller or produced here
		return nil
	}
	if err := f.enc.Encode(v); err != nil {
		return err
	}
	f.buf.Truncate(f.buf.Len() - 1)
	return nil
}

func (f *frame) endLine() { f.buf.WriteByte('\n') }

// begin starts a message: {"jsonrpc":"2.0", then the ID member if any.
func (f *frame) begin(id []byte) {
	f.buf.WriteString(`{"jsonrpc":"2.0"`)
	if id != nil {
		f.buf.WriteString(`,"id":`)
		f.buf.Write(id)
	}
}

// requestFrame builds a request (id set) or notification line.
func requestFrame(id []byte, method string, params any) (*frame, error) {
	f := getFrame()
	f.begin(id)
	f.buf.WriteString(`,"method":`)
	if plainASCII(method) {
		f.buf.Write(strconv.AppendQuote(f.buf.AvailableBuffer(), method))
	} else {
		_ = f.encode(method) // Go's quoting of other bytes is not JSON's
	}
	if params != nil {
		f.buf.WriteString(`,"params":`)
		if err := f.encode(params); err != nil {
			f.release()
			return nil, err
		}
	}
	f.buf.WriteString("}\n")
	return f, nil
}

// plainASCII reports whether strconv's quoting of s is also valid JSON: only
// printable ASCII, where both escape just '"' and '\\'.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// resultFrame builds a success answer.
func resultFrame(id []byte, result any) (*frame, error) {
	f := getFrame()
	f.begin(id)
	f.buf.WriteString(`,"result":`)
	if err := f.encode(result); err != nil {
		f.release()
		return nil, err
	}
	f.buf.WriteString("}\n")
	return f, nil
}

// errorFrame builds an error answer; a nil id is written as null, as
// JSON-RPC requires when the request's ID could not be read.
func errorFrame(id []byte, e *Error) *frame {
	if id == nil {
		id = jsonNull
	}
	f := getFrame()
	f.begin(id)
	f.buf.WriteString(`,"error":`)
	if err := f.encode(e); err != nil { // only Data can fail; drop it
		f.buf.Reset()
		f.release()
		return errorFrame(id, &Error{Code: e.Code, Message: e.Message})
	}
	f.buf.WriteString("}\n")
	return f
}

// writer owns the write side: senders queue frames and return at once; one
// goroutine writes them in order and flushes when the queue runs dry, so
// bursts share a system call and a stuck peer blocks nobody but the writer.
type writer struct {
	bw      *bufio.Writer
	owner   *Stream
	mu      sync.Mutex
	limit   int           // queued answer bytes above which the reader waits
	queued  int           // bytes of answers queued and not yet written
	room    chan struct{} // closed when queued drops, if the reader waits
	queue   []*frame
	spare   []*frame
	closing bool
	err     error
	wake    chan struct{}
	done    chan struct{}
	started sync.Once
}

func newWriter(w io.Writer, owner *Stream) *writer {
	return &writer{
		bw:    bufio.NewWriterSize(w, 64<<10),
		owner: owner,
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
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
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
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

func (w *writer) write(batch []*frame) error {
	var err error
	written := 0
	for i, f := range batch {
		if err == nil {
			_, err = w.bw.Write(f.buf.Bytes())
		}
		if f.answer {
			written += f.buf.Len()
		}
		f.release()
		batch[i] = nil
	}
	if err == nil {
		err = w.bw.Flush()
	}
	w.mu.Lock()
	w.spare = batch[:0]
	w.queued -= written
	if w.room != nil {
		close(w.room)
		w.room = nil
	}
	w.mu.Unlock()
	return err
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

// fail stops the writer for good and drops what is still queued.
func (w *writer) fail(err error) {
	w.mu.Lock()
	first := w.err == nil
	if first {
		w.err = err
	}
	closing := w.closing
	dropped := w.queue
	w.queue = nil
	if w.room != nil {
		close(w.room)
		w.room = nil
	}
	w.mu.Unlock()
	for _, f := range dropped {
		f.release()
	}
	if first && err != errWriterClosed && !closing && w.owner.router != nil {
		go w.owner.router.writeFailed(err) // not on this goroutine: shutdown waits for it
	}
}

// drain asks the writer to finish the queue and stop, waiting at most d.
func (w *writer) drain(d time.Duration) {
	w.started.Do(func() { go w.run() })
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	}
}

// stop waits for the writer to end; the caller has closed the underlying
// writer, which unblocks a write stuck on a peer that stopped reading.
func (w *writer) stop() {
	<-w.done
}
