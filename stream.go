package acprpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// DefaultMaxMessageSize is the longest line a Stream accepts unless told
// otherwise: the TypeScript ACP SDK's limit, so either side can send the
// other anything it would itself accept.
const DefaultMaxMessageSize = 32 << 20

// readBufferSize is the read buffer: small messages are framed in it without
// any growth, large ones are gathered from it.
const readBufferSize = 64 << 10

// prefixKept is how much of an over-long line is held to find its ID.
const prefixKept = 4 << 10

// Stream is ACP's stdio framing: one JSON-RPC message per line, lines ending
// in "\n" (a "\r" before it and blank lines are accepted). It implements
// sourcegraph's jsonrpc2.ObjectStream, validates every line in one pass, and
// answers bad lines itself, so a malformed message never reaches the engine
// and never ends the connection. Writes go through one writer goroutine, so a
// caller is never blocked by a peer that has stopped reading.
//
// A Stream is used by one Conn. Used on its own with sourcegraph's Conn, it
// still validates and answers bad lines, and passes good ones on whole.
type Stream struct {
	r        *bufio.Reader
	closers  []io.Closer
	maxLine  int
	out      *writer
	router   router // the Conn, once attached
	closeErr error
	once     sync.Once
}

// router is how a Stream hands the Conn each message and each bad line, on
// the read goroutine, in the order read.
type router interface {
	// route hands the Conn a request, notification or response. m is
	// passed by value so that it stays on the read goroutine's stack.
	route(m message)
	badLine(e *lineError)
	overLong(prefix []byte, size int)
	readEnded(err error)
	writeFailed(err error)
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
	s := &Stream{
		r:       bufio.NewReaderSize(r, readBufferSize),
		closers: closers,
		maxLine: DefaultMaxMessageSize,
	}
	s.out = newWriter(w, s)
	return s
}

// ReadObject reads and handles lines until the input ends or fails, which
// is the error it returns. With a Conn attached, every line is routed to the
// Conn or answered as it is read, and nothing is returned to the engine.
// Used on its own, it returns each valid message in v.
func (s *Stream) ReadObject(v any) error {
	for {
		s.out.waitRoom()
		line, size, err := s.readLine()
		if size > s.maxLine {
			if s.router != nil {
				s.router.overLong(line, size)
			}
			continue
		}
		if !blank(line) {
			if s.deliver(line, v) {
				return nil
			}
		}
		if err != nil {
			if s.router != nil {
				s.router.readEnded(err)
			}
			return err
		}
	}
}

// deliver handles one non-blank line and reports whether v was filled,
// which only a Stream without a Conn does.
func (s *Stream) deliver(line []byte, v any) bool {
	m, bad := parseLine(line)
	switch {
	case bad != nil && s.router != nil:
		s.router.badLine(bad)
	case bad != nil:
	case s.router == nil:
		return json.Unmarshal(line, v) == nil
	default:
		s.router.route(m)
	}
	return false
}

// readLine returns the next line without its line end, copied so it can be
// kept. A line longer than the limit is consumed without being held: only its
// first bytes come back, with its size. A last line without "\n" is returned
// with the error that ended it.
func (s *Stream) readLine() (line []byte, size int, err error) {
	chunk, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		line, size, err = s.readLong(chunk)
	} else {
		line, size = append([]byte(nil), chunk...), len(chunk)
	}
	if err == nil {
		size-- // the "\n" is framing, not message
	}
	if size > s.maxLine {
		return line[:min(prefixKept, len(line))], size, err
	}
	return trimLineEnd(line), size, err
}

// readLong reads the rest of a line longer than the read buffer, whose
// first part is first. The parts are kept as they come and joined once, so
// a long line is copied twice rather than once per growth of one slice.
// Parts beyond the size limit are not kept.
func (s *Stream) readLong(first []byte) (line []byte, size int, err error) {
	parts := [][]byte{bytes.Clone(first)}
	size, err = len(first), bufio.ErrBufferFull
	for err == bufio.ErrBufferFull {
		var chunk []byte
		chunk, err = s.r.ReadSlice('\n')
		size += len(chunk)
		if size <= s.maxLine+1 {
			parts = append(parts, bytes.Clone(chunk))
		}
	}
	return bytes.Join(parts, nil), size, err
}

// blank reports whether a line holds nothing but white space; such a line
// is skipped like an empty one, as ACP's other SDKs do.
func blank(line []byte) bool {
	for _, c := range line {
		if !isSpace(c) {
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

// WriteObject encodes obj as one line and queues it. The Conn writes its own
// lines with send; this exists for the ObjectStream contract.
func (s *Stream) WriteObject(obj any) error {
	f := getFrame()
	if err := f.encode(obj); err != nil {
		f.release()
		return err
	}
	f.endLine()
	return s.out.send(f)
}

// Close stops the Stream: lines already queued are written if the peer takes
// them within a short time, then both directions are closed. Safe to call
// more than once.
func (s *Stream) Close() error {
	s.once.Do(func() {
		s.out.drain(closeFlushTimeout)
		for _, c := range s.closers {
			if err := c.Close(); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
		s.out.stop()
	})
	return s.closeErr
}

// closeFlushTimeout bounds how long Close waits for queued lines to be
// taken by a peer that may have stopped reading.
const closeFlushTimeout = 250 * time.Millisecond

var _ jsonrpc2.ObjectStream = (*Stream)(nil)

// errWriterClosed is the writer's reason once it has stopped.
var errWriterClosed = errors.New("stream closed")
