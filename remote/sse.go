package remote

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/acpkit/acprpc"
)

// SSE framing as ACP's Streamable HTTP uses it: one event per message,
// "data: <json>\n\n", and ":\n\n" as a keep-alive comment; on a stream
// that can be resumed (resume.go), each event starts with "id: <n>\n".
var (
	sseID        = []byte("id: ")
	sseData      = []byte("data: ")
	sseEnd       = []byte("\n\n")
	sseLine      = []byte("\n")
	sseKeepAlive = []byte(":\n\n")
)

// eventSink is where an SSE stream's events are written: net/http's
// response (responseSink), or the stream's own HTTP/1 connection, taken
// from net/http (connSink). Every write has a deadline.
type eventSink interface {
	events(msgs [][]byte, first uint64, deadline time.Time) error // the messages in order, each an event, with IDs from first unless it is 0
	keepAlive(deadline time.Time) error
	// wait returns once a message may have been queued or the connection
	// closed (woken), KeepAlive has passed (keepAliveDue), or the client
	// has gone (gone).
	wait() waited
}

// waited is why an eventSink's wait returned.
type waited int

const (
	woken waited = iota
	keepAliveDue
	gone
)

// responseSink writes events through net/http's response, flushed
// together.
type responseSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	wake    <-chan struct{} // the stream's
	closed  <-chan struct{} // the connection's
	done    <-chan struct{} // the request's context's
	ticks   <-chan time.Time
	stopTks func() bool
}

func newResponseSink(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, h *httpConn, st *outStream, keepAlive time.Duration) *responseSink {
	k := &responseSink{w: w, rc: rc, wake: st.wake, closed: h.closed, done: r.Context().Done(), stopTks: func() bool { return false }}
	if keepAlive > 0 {
		t := time.NewTicker(keepAlive)
		k.ticks, k.stopTks = t.C, func() bool { t.Stop(); return true }
	}
	return k
}

func (r *responseSink) events(msgs [][]byte, first uint64, deadline time.Time) error {
	_ = r.rc.SetWriteDeadline(deadline)
	bufs := eventBuffers(msgs, first)
	if _, err := bufs.WriteTo(r.w); err != nil {
		return err
	}
	return r.rc.Flush()
}

// eventBuffers frames msgs as SSE events, with IDs from first unless it is
// 0.
func eventBuffers(msgs [][]byte, first uint64) net.Buffers {
	per := 3
	if first != 0 {
		per = 5
	}
	bufs := make(net.Buffers, 0, per*len(msgs))
	for i, msg := range msgs {
		if first != 0 {
			bufs = append(bufs, sseID, strconv.AppendUint(nil, first+uint64(i), 10), sseLine)
		}
		bufs = append(bufs, sseData, msg, sseEnd)
	}
	return bufs
}

func (r *responseSink) keepAlive(deadline time.Time) error {
	if _, err := r.w.Write(sseKeepAlive); err != nil {
		return err
	}
	return flushBy(r.rc, deadline)
}

func (r *responseSink) wait() waited {
	select {
	case <-r.wake:
	case <-r.closed: // write what is left, by drainBy
	case <-r.ticks:
		return keepAliveDue
	case <-r.done:
		return gone
	}
	return woken
}

// connSink writes events straight to the stream's connection, those
// written together in one system call, after a response head of its own
// whose body ends when the connection closes (HTTP/1's rule for a response
// without a length, and the stream's answer says Connection: close). A
// stream so taken from net/http holds none of its buffers (8 KiB for
// reading and writing the connection, 2 KiB for the response) nor its
// goroutines (the request's, and the one that watches for the client to
// hang up), which would hold them for the stream's life: its one goroutine
// writes, and between writes waits in a read of the connection, which
// tells it the client has gone, and which a message queued, the
// connection's close and the keep-alive's time cut short (poke, and the
// read deadline).
type connSink struct {
	c      net.Conn
	header []byte          // the response head, until written
	wake   <-chan struct{} // the stream's
	closed <-chan struct{} // the connection's
	every  time.Duration   // KeepAlive, or 0
	due    time.Time       // when the next keep-alive is
	vec    [6][]byte       // bufs' backing
	bufs   net.Buffers     // kept here to spare an allocation per event
	id     [20]byte        // an event's ID, written out
	drop   [64]byte        // what a read takes, and drops
}

// hijackStream takes the connection of a stream's GET from net/http, when
// it is HTTP/1 and the Server is not closed, and returns the connSink that
// writes to it, with w's headers as its response's; the caller runs the
// stream on a goroutine of its own, after head, and ends it with close
// and rawStreams.Done. It returns nil when the connection stays net/http's
// (HTTP/2, a ResponseWriter that cannot hijack).
func (s *Server) hijackStream(w http.ResponseWriter, r *http.Request, h *httpConn, st *outStream) *connSink {
	if r.ProtoMajor != 1 || !s.startRawStream() {
		return nil
	}
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	_ = w.Header().Write(&head) // as net/http writes them, values cleaned of line breaks
	head.WriteString("\r\n")
	c, _, err := http.NewResponseController(w).Hijack() // bytes sent after the GET, if any, are not read
	if err != nil {
		s.rawStreams.Done()
		return nil
	}
	boundSendBuffer(c, s.opts.SendBuffer)
	k := &connSink{c: c, header: head.Bytes(), wake: st.wake, closed: h.closed, every: s.opts.KeepAlive}
	if k.every > 0 {
		k.due = time.Now().Add(k.every)
	}
	h.setWaker(st, func(d time.Time) { _ = c.SetWriteDeadline(d) }, k.poke)
	return k
}

// head writes the response's status line and headers.
func (k *connSink) head(deadline time.Time) error {
	_ = k.c.SetWriteDeadline(deadline)
	_, err := k.c.Write(k.header)
	k.header = nil
	return err
}

func (k *connSink) events(msgs [][]byte, first uint64, deadline time.Time) error {
	_ = k.c.SetWriteDeadline(deadline)
	if len(msgs) == 1 {
		k.vec = [6][]byte{sseID, strconv.AppendUint(k.id[:0], first, 10), sseLine, sseData, msgs[0], sseEnd}
		k.bufs = k.vec[:]
		if first == 0 {
			k.bufs = k.vec[3:]
		}
		_, err := k.bufs.WriteTo(k.c)
		k.vec[4] = nil // msgs[0] is only lent
		return err
	}
	bufs := eventBuffers(msgs, first)
	_, err := bufs.WriteTo(k.c)
	return err
}

func (k *connSink) keepAlive(deadline time.Time) error {
	_ = k.c.SetWriteDeadline(deadline)
	_, err := k.c.Write(sseKeepAlive)
	return err
}

// longAgo is a read deadline that has passed: it cuts a read short.
var longAgo = time.Unix(1, 0)

// poke cuts short the read that wait is in, or the next one. A message is
// queued (wake signalled) or the connection closed before poke, so a wait
// that sets its deadline after the poke sees them when it looks.
func (k *connSink) poke() { _ = k.c.SetReadDeadline(longAgo) }

func (k *connSink) wait() waited {
	_ = k.c.SetReadDeadline(k.due) // zero, no deadline, without keep-alives
	select {
	case <-k.wake:
		return woken
	case <-k.closed:
		return woken
	default:
	}
	for {
		_, err := k.c.Read(k.drop[:]) // a client sends nothing more on a stream's connection; what it sends anyway is dropped
		switch {
		case err == nil:
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return gone
		case k.every > 0 && !time.Now().Before(k.due):
			k.due = time.Now().Add(k.every)
			return keepAliveDue
		default:
			return woken
		}
	}
}

// close closes the connection, which ends the stream's response.
func (k *connSink) close() { _ = k.c.Close() }

// sseReader reads the events of an SSE stream. It keeps the data lines
// of each event, joined by "\n", and the last event ID, and ignores
// comments and other fields.
type sseReader struct {
	r      *bufio.Reader
	limit  int
	lastID []byte // the ID of the last event next returned (the last "id:" field before it, as SSE has it)
	id     []byte // the last "id:" field read; both reuse their arrays, so an event's ID costs no allocation
}

func newSSEReader(r io.Reader, limit int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), limit: limit}
}

// next returns the data of the next event that has any. An event over the
// limit is dropped as it is read, and reported as a
// *acprpc.MessageTooLargeError whose scan saw all of it, so the Conn finds
// its ID wherever it is; the stream reads on.
func (s *sseReader) next() ([]byte, error) {
	ev := eventData{limit: s.limit}
	for {
		line, full, err := s.readPart()
		if err != nil {
			if err == io.EOF && ev.has {
				err = io.ErrUnexpectedEOF // an event cut short is not delivered
			}
			return nil, err
		}
		if len(line) == 0 && !full {
			if !ev.has {
				continue
			}
			s.lastID = append(s.lastID[:0], s.id...)
			return ev.result()
		}
		if value, isID := bytes.CutPrefix(line, []byte("id:")); isID && !full {
			s.id = append(s.id[:0], bytes.TrimPrefix(value, []byte(" "))...)
			continue
		}
		value, isData := bytes.CutPrefix(line, []byte("data:"))
		if isData {
			ev.startLine()
			ev.add(bytes.TrimPrefix(value, []byte(" ")))
		}
		for full { // the rest of a line longer than the buffer
			if line, full, err = s.readPart(); err != nil {
				return nil, io.ErrUnexpectedEOF
			}
			if isData {
				ev.add(line)
			}
		}
	}
}

// readPart returns the next part of a line, valid until the next call:
// the whole line without its end, or, for a line longer than the buffer, a
// buffer's worth with full set and the rest still to read.
func (s *sseReader) readPart() (part []byte, full bool, err error) {
	part, err = s.r.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return part, true, nil
	case err != nil && !(err == io.EOF && len(part) > 0):
		return nil, false, err
	}
	return bytes.TrimRight(part, "\r\n"), false, nil
}

// eventData gathers one event's data lines, joined by "\n", up to the limit;
// past it, the rest only goes through the scan of a MessageTooLargeError.
type eventData struct {
	limit    int
	data     []byte
	has      bool
	tooLarge *acprpc.MessageTooLargeError
}

func (e *eventData) startLine() {
	if e.has {
		e.add([]byte{'\n'})
	}
	e.has = true
}

func (e *eventData) add(p []byte) {
	switch {
	case e.tooLarge != nil:
		_, _ = e.tooLarge.Write(p)
	case len(e.data)+len(p) <= e.limit:
		e.data = append(e.data, p...)
	default:
		e.tooLarge = &acprpc.MessageTooLargeError{Limit: e.limit}
		_, _ = e.tooLarge.Write(e.data)
		_, _ = e.tooLarge.Write(p)
		e.data = nil
	}
}

func (e *eventData) result() ([]byte, error) {
	if e.tooLarge != nil {
		return nil, e.tooLarge
	}
	return e.data, nil
}
