package acprpc

import (
	"bufio"
	"bytes"
	"io"
	"sync"

	"github.com/acpkit/acprpc/internal/fdio"
	"github.com/acpkit/acprpc/internal/wire"
)

// DefaultMaxMessageSize is the longest message accepted unless told
// otherwise: the TypeScript ACP SDK's limit, so either side can send the
// other anything it would itself accept.
const DefaultMaxMessageSize = 32 << 20

// readBufferSize is the read buffer: small messages are framed in it without
// any growth, large ones are gathered from it.
const readBufferSize = 64 << 10

// Stream is ACP's stdio framing as a Transport: one JSON-RPC message per
// line, lines ending in "\n" (a "\r" before it and blank lines are
// accepted). A line over the limit is consumed without being held in
// memory.
type Stream struct {
	r     *bufio.Reader
	limit int   // set by the Conn before its first Recv
	err   error // what ended the input, returned after its last line

	// The write side. Send, trySend and Flush are never called at once.
	out     io.Writer
	noWait  *fdio.NoWaitWriter // out written without waiting, or nil
	unread  *fdio.InputProbe   // counts the input's bytes no read has taken, or nil
	pending *[]byte            // sent bytes not yet written, in a pooled buffer; nil when none

	readParks bool // a read that waits parks in the runtime's poller

	closers   []io.Closer
	canCut    bool // closing ends a blocked read and write
	closeOnce sync.Once
	closeErr  error
}

// NewStream returns a Stream over rwc, such as a net.Conn; closing the
// Stream closes rwc.
func NewStream(rwc io.ReadWriteCloser) *Stream {
	return newStream(rwc, rwc, rwc)
}

// NewStreamPipes returns a Stream that reads r and writes w, such as a
// subprocess's stdout and stdin pipes or os.Stdin and os.Stdout. Closing the
// Stream closes each of them that is an io.Closer.
func NewStreamPipes(r io.Reader, w io.Writer) *Stream {
	var closers []io.Closer
	for _, x := range []any{w, r} {
		if c, ok := x.(io.Closer); ok {
			closers = append(closers, c)
		}
	}
	return newStream(r, w, closers...)
}

func newStream(r io.Reader, w io.Writer, closers ...io.Closer) *Stream {
	return &Stream{
		r:         bufio.NewReaderSize(r, readBufferSize),
		out:       w,
		noWait:    fdio.NewNoWaitWriter(w),
		unread:    fdio.NewInputProbe(r),
		limit:     DefaultMaxMessageSize,
		closers:   closers,
		canCut:    fdio.CloseInterrupts(r) && fdio.CloseInterrupts(w),
		readParks: fdio.Polled(r),
	}
}

// inputWaiting reports whether the peer has written bytes that no Recv has
// read yet.
func (s *Stream) inputWaiting() bool { return s.unread != nil && s.unread.Waiting() }

// interruptible reports whether Close ends a Recv or Send in progress.
func (s *Stream) interruptible() bool { return s.canCut }

// SetReadLimit sets the longest line Recv accepts, in bytes, line end not
// counted.
func (s *Stream) SetReadLimit(n int) { s.limit = n }

// Recv returns the next non-blank line, without its line end. A line over
// the limit is returned as a *MessageTooLargeError, which found the line's ID
// without holding the line.
func (s *Stream) Recv() ([]byte, error) {
	for s.err == nil {
		line, tooLarge, err := s.readLine()
		s.err = err
		if tooLarge != nil {
			return nil, tooLarge
		}
		if !blank(line) {
			return line, nil
		}
	}
	return nil, s.err
}

// recvHoldsThread reports whether the next Recv would wait in a system call
// that holds the thread: the input is not polled and no whole line is
// buffered.
func (s *Stream) recvHoldsThread() bool {
	if s.readParks {
		return false
	}
	b, _ := s.r.Peek(s.r.Buffered())
	return bytes.IndexByte(b, '\n') < 0
}

// readLine returns the next line without its line end ("\n", and a "\r"
// before it: framing, not message), copied so it can be kept, or the error
// for a line over the limit. A last line without "\n" is returned with the
// error that ended it.
func (s *Stream) readLine() (line []byte, tooLarge *MessageTooLargeError, err error) {
	chunk, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return s.readLong(chunk)
	}
	line = trimLineEnd(chunk)
	if len(line) > s.limit {
		return nil, newMessageTooLarge(line, s.limit), err
	}
	return bytes.Clone(line), nil, err
}

// readLong reads the rest of a line longer than the read buffer, whose
// first part is first. The parts are kept as they come and joined once, so
// a long line is copied twice rather than once per growth of one slice.
// Once the line is known to be over the limit, its parts are no longer
// kept, only scanned for its ID: a line of any length costs the read
// buffer and the limit.
func (s *Stream) readLong(first []byte) (line []byte, tooLarge *MessageTooLargeError, err error) {
	parts := [][]byte{bytes.Clone(first)}
	size, ends := len(first), lineEnds(first, 0)
	for err = bufio.ErrBufferFull; err == bufio.ErrBufferFull; {
		var chunk []byte
		chunk, err = s.r.ReadSlice('\n')
		size, ends = size+len(chunk), lineEnds(chunk, ends)
		switch {
		case tooLarge != nil:
			_, _ = tooLarge.Write(chunk)
		case size-ends > s.limit: // whatever follows, the message is longer than the limit
			tooLarge = &MessageTooLargeError{Limit: s.limit}
			for _, p := range append(parts, chunk) {
				_, _ = tooLarge.Write(p)
			}
			parts = nil
		default:
			parts = append(parts, bytes.Clone(chunk))
		}
	}
	if tooLarge != nil {
		tooLarge.Size = size - ends
		return nil, tooLarge, err
	}
	return trimLineEnd(bytes.Join(parts, nil)), nil, err
}

// lineEnds counts the "\r" and "\n" bytes at the end of what has been read
// of a line, given the count before chunk: those may be the line's end
// rather than its message.
func lineEnds(chunk []byte, before int) int {
	n := len(chunk) - len(trimLineEnd(chunk))
	if n == len(chunk) {
		return before + n
	}
	return n
}

// blank reports whether a line holds nothing but white space; such a line
// is skipped like an empty one, as ACP's other SDKs do.
func blank(line []byte) bool {
	for _, c := range line {
		if !wire.IsSpace(c) {
			return false
		}
	}
	return true
}

func trimLineEnd(b []byte) []byte {
	n := len(b)
	for n > 0 && (b[n-1] == '\n' || b[n-1] == '\r') {
		n--
	}
	return b[:n]
}

// writeBufferSize is how many sent bytes wait for a Flush before Send
// writes them out itself.
const writeBufferSize = 64 << 10

// writeBuffers hold what is sent until it is written: a Stream holds one
// only from a Send to the Flush after it, so an idle connection holds none.
// A new one is small, for a message or two; a burst grows it once, to the
// full size.
var writeBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 4<<10)
	return &b
}}

// Send adds msg and its line end to what waits to be written; Flush writes
// it out, and so does Send when the write buffer would overflow. A message
// larger than the buffer is written straight through. msg must hold no
// newline, which compact JSON never does.
func (s *Stream) Send(msg []byte) error {
	if s.pending != nil && len(*s.pending)+len(msg)+1 > writeBufferSize {
		if err := s.Flush(); err != nil {
			return err
		}
	}
	if len(msg) >= writeBufferSize {
		if _, err := s.out.Write(msg); err != nil {
			return err
		}
		msg = nil
	}
	s.buffer(msg)
	return nil
}

// buffer appends msg and its line end to the pending bytes.
func (s *Stream) buffer(msg []byte) {
	if s.pending == nil {
		s.pending = writeBuffers.Get().(*[]byte)
	}
	b := *s.pending
	if need := len(b) + len(msg) + 1; need > cap(b) {
		b = append(make([]byte, 0, max(need, writeBufferSize)), b...)
	}
	*s.pending = append(append(b, msg...), '\n')
}

// canTrySend reports whether the output is a descriptor the runtime polls,
// which trySend can write without waiting.
func (s *Stream) canTrySend() bool { return s.noWait != nil }

// trySend is Send followed by as much of a Flush as the reader takes
// without waiting; it reports whether bytes are left for Flush.
func (s *Stream) trySend(msg []byte) (unflushed bool, err error) {
	s.buffer(msg)
	if s.noWait == nil {
		return true, nil
	}
	b := *s.pending
	n, err := s.noWait.TryWrite(b)
	if n == len(b) {
		s.release()
		return false, err
	}
	*s.pending = b[:copy(b, b[n:])]
	return true, err
}

// Flush writes out what Send has left waiting.
func (s *Stream) Flush() error {
	if s.pending == nil {
		return nil
	}
	_, err := s.out.Write(*s.pending)
	s.release()
	return err
}

// release gives the write buffer back; one grown past its size is let go.
func (s *Stream) release() {
	b := s.pending
	s.pending = nil
	if cap(*b) > writeBufferSize {
		return
	}
	*b = (*b)[:0]
	writeBuffers.Put(b)
}

// Close closes both directions. Safe to call more than once.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		for _, c := range s.closers {
			if err := c.Close(); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
	})
	return s.closeErr
}
