//go:build unix

package remote

import (
	"bufio"
	"io"
	"net"
	"sync"
	"syscall"
)

// wsConn is the network connection under a server's WebSocket, shaped so
// that a connection waiting for its peer holds no buffer: coder/websocket
// reads and writes through the bufio.Reader and bufio.Writer it is given,
// and net/http hands over 4 KiB of each with a hijacked connection, held
// for the connection's life. A wsConn gives the library buffers of
// minBufio bytes instead, and under them:
//
//   - reads: each read that finds no data waiting takes a buffer of
//     readChunk bytes from a pool only once the socket has data for it,
//     and gives it back once its bytes have been read, so one system call
//     still reads as much as a 4 KiB buffer would;
//   - writes: the pieces of a frame that the small bufio.Writer passes on
//     (its header first, then its payload) are held, at most heldMax
//     bytes, until the frame is complete or a piece is large, then written
//     together, with writev, so that a frame still leaves in one system
//     call. A frame tracker tells where each frame ends;
//   - batches: between hold and release (the transport's Send and Flush,
//     which its Conn calls once its write queue runs dry), the frames
//     written are gathered, up to batchMax bytes, in a pooled buffer and
//     leave together, so that messages queued back to back share a system
//     call instead of taking one each. A control frame (a pong, a close)
//     is not held back: it leaves with what was gathered before it.
//
// Only a connection that offers its file descriptor (syscall.Conn: TCP or
// a Unix socket, not TLS) is shaped; the others keep net/http's buffers.
type wsConn struct {
	net.Conn
	raw syscall.RawConn

	// The read side, used by the one reader coder/websocket allows.
	pending []byte                // bytes that came before the hijack, read first
	chunk   *[]byte               // a pooled buffer holding unread bytes, or nil
	r, w    int                   // its unread bytes are (*chunk)[r:w]
	tryRead func(fd uintptr) bool // the method value, made once: a closure per read would be an allocation
	readN   int                   // what tryRead's last attempt read
	readErr error

	// The write side, used by the one writer coder/websocket allows, and by
	// release between its frames: mu orders the two.
	mu     sync.Mutex
	held   bool    // hold was called, release not yet
	batch  *[]byte // what was written while held, in a pooled buffer; nil when none
	frames frameTracker
	piece  [heldMax]byte // a frame's small pieces, held until it is complete
	npiece int
	vec    [2][]byte   // bufs' backing
	bufs   net.Buffers // kept here to spare an allocation per frame
}

const (
	minBufio  = 16 // the smallest bufio.Reader; it holds any frame header but a masked one with a 64-bit length
	readChunk = 4 << 10
	heldMax   = 32 // more than a header and the bufio.Writer's first flush
	batchMax  = 64 << 10
)

var (
	readChunks   = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}
	writeBatches = sync.Pool{New: func() any { b := make([]byte, 0, batchMax); return &b }}
)

// shapeHijacked returns what a hijack hands coder/websocket: c and brw as
// net/http made them, or c shaped as a wsConn with small buffers when c
// offers its descriptor. Bytes net/http read beyond the upgrade request
// are read first; anything it had yet to write is written first.
func shapeHijacked(c net.Conn, brw *bufio.ReadWriter) (net.Conn, *bufio.ReadWriter, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c, brw, nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return c, brw, nil
	}
	if err := brw.Writer.Flush(); err != nil {
		return nil, nil, err
	}
	wc := &wsConn{Conn: c, raw: raw}
	wc.tryRead = wc.readAttempt
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		wc.pending = append([]byte(nil), b...)
	}
	return wc, bufio.NewReadWriter(bufio.NewReaderSize(wc, minBufio), bufio.NewWriterSize(wc, minBufio)), nil
}

// Read reads what is waiting, else waits for the socket. A read as large
// as a chunk goes straight into p.
func (c *wsConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	if c.chunk == nil {
		if len(p) >= readChunk {
			return c.Conn.Read(p)
		}
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, (*c.chunk)[c.r:c.w])
	c.r += n
	if c.r == c.w {
		readChunks.Put(c.chunk)
		c.chunk = nil
	}
	return n, nil
}

// fill waits until the socket has data and reads it into a pooled chunk.
func (c *wsConn) fill() error {
	c.readN, c.readErr = 0, nil
	if err := c.raw.Read(c.tryRead); err != nil {
		return err
	}
	switch {
	case c.readErr != nil:
		return &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: c.readErr}
	case c.readN <= 0:
		return io.EOF
	}
	return nil
}

// readAttempt is fill's attempt at a read, which the poller repeats once the
// socket is readable while it reports false. The chunk is taken for each
// attempt and given back when the socket has nothing yet, so the wait
// itself holds none.
func (c *wsConn) readAttempt(fd uintptr) bool {
	b := readChunks.Get().(*[]byte)
	for {
		c.readN, c.readErr = syscall.Read(int(fd), *b)
		if c.readErr != syscall.EINTR {
			break
		}
	}
	if c.readErr == syscall.EAGAIN {
		readChunks.Put(b)
		return false
	}
	if c.readN > 0 {
		c.chunk, c.r, c.w = b, 0, c.readN
	} else {
		readChunks.Put(b)
	}
	return true
}

// Write passes p on, holding a frame's small pieces until it is complete
// (see wsConn), or gathering it into the batch while held. A failed write
// fails the connection, so what was held is not kept for another try.
func (c *wsConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	atEnd := c.frames.advance(p)
	if c.held {
		return c.gather(p, atEnd && c.frames.control())
	}
	if !atEnd && c.npiece+len(p) <= len(c.piece) {
		c.npiece += copy(c.piece[c.npiece:], p)
		return len(p), nil
	}
	if c.npiece == 0 {
		return c.Conn.Write(p)
	}
	err := c.writeTwo(c.piece[:c.npiece], p)
	c.npiece = 0
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// gather adds p to the batch, and writes the batch out when p would take
// it over batchMax (with p, in one system call) or out is set. c.mu is
// held.
func (c *wsConn) gather(p []byte, out bool) (int, error) {
	if c.batch == nil {
		c.batch = writeBatches.Get().(*[]byte)
	}
	b := *c.batch
	if len(b)+len(p) > batchMax {
		err := c.writeTwo(b, p)
		c.dropBatch()
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
	*c.batch = append(b, p...)
	if out {
		if err := c.writeBatch(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// hold starts a batch: what is written until release leaves together.
func (c *wsConn) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = true
	if c.npiece > 0 { // a frame begun before: its pieces go first
		c.batch = writeBatches.Get().(*[]byte)
		*c.batch = append((*c.batch)[:0], c.piece[:c.npiece]...)
		c.npiece = 0
	}
}

// release ends a batch and writes it out.
func (c *wsConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	return c.writeBatch()
}

// writeBatch writes the batch out and gives its buffer back; c.mu is held.
func (c *wsConn) writeBatch() error {
	if c.batch == nil {
		return nil
	}
	_, err := c.Conn.Write(*c.batch)
	c.dropBatch()
	return err
}

func (c *wsConn) dropBatch() {
	*c.batch = (*c.batch)[:0]
	writeBatches.Put(c.batch)
	c.batch = nil
}

// writeTwo writes a and b in one system call (writev); c.mu is held.
func (c *wsConn) writeTwo(a, b []byte) error {
	c.vec[0], c.vec[1] = a, b
	c.bufs = c.vec[:]
	_, err := c.bufs.WriteTo(c.Conn)
	c.vec[0], c.vec[1] = nil, nil // only lent
	return err
}

// frameTracker follows a stream of WebSocket frames as it is written, to
// tell when it is at the end of a frame (RFC 6455, section 5.2: two bytes,
// then 2 or 8 bytes of extended length, then 4 of mask key if masked, then
// the payload).
type frameTracker struct {
	header  [2]byte
	nheader int    // of the first two bytes, how many were seen
	rest    int    // header bytes still to come after the first two
	length  uint64 // the extended length, as its bytes come
	payload uint64 // payload bytes still to come
}

// advance follows p and reports whether the stream is now at the end of a
// frame.
func (f *frameTracker) advance(p []byte) bool {
	for len(p) > 0 {
		switch {
		case f.nheader < 2:
			f.header[f.nheader] = p[0]
			f.nheader++
			p = p[1:]
			if f.nheader == 2 {
				f.startHeader()
			}
		case f.rest > 0:
			if f.extLen() > 0 {
				f.length = f.length<<8 | uint64(p[0])
			}
			f.rest--
			p = p[1:]
			if f.rest == 0 {
				f.startPayload()
			}
		default:
			k := uint64(len(p))
			if k > f.payload {
				k = f.payload
			}
			f.payload -= k
			p = p[k:]
			if f.payload == 0 {
				f.nheader = 0
			}
		}
	}
	return f.nheader == 0
}

// control reports whether the last frame begun is a control frame (a
// ping, a pong, a close: opcodes 8 and above).
func (f *frameTracker) control() bool { return f.header[0]&0x08 != 0 }

// extLen is how many extended length bytes are still to come.
func (f *frameTracker) extLen() int {
	mask := 0
	if f.header[1]&0x80 != 0 {
		mask = 4
	}
	return max(f.rest-mask, 0)
}

// startHeader learns from the second byte how many header bytes follow.
func (f *frameTracker) startHeader() {
	f.length, f.rest = 0, 0
	switch f.header[1] & 0x7f {
	case 126:
		f.rest = 2
	case 127:
		f.rest = 8
	}
	if f.header[1]&0x80 != 0 {
		f.rest += 4
	}
	if f.rest == 0 {
		f.startPayload()
	}
}

// startPayload sets the payload's length once the header is complete; a
// frame without payload ends with its header.
func (f *frameTracker) startPayload() {
	switch f.header[1] & 0x7f {
	case 126, 127:
		f.payload = f.length
	default:
		f.payload = uint64(f.header[1] & 0x7f)
	}
	if f.payload == 0 {
		f.nheader = 0
	}
}
