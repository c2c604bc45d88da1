package remote

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"time"

	"github.com/acpkit/acprpc"
)

// SSE framing as ACP's Streamable HTTP uses it: one event per message,
// "data: <json>\n\n", and ":\n\n" as a keep-alive comment.
var (
	sseData      = []byte("data: ")
	sseEnd       = []byte("\n\n")
	sseKeepAlive = []byte(":\n\n")
)

// writeEvent writes one message as an SSE event and flushes it to the
// client by deadline.
func writeEvent(w http.ResponseWriter, rc *http.ResponseController, msg []byte, deadline time.Time) error {
	_ = rc.SetWriteDeadline(deadline)
	if _, err := w.Write(sseData); err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if _, err := w.Write(sseEnd); err != nil {
		return err
	}
	return rc.Flush()
}

// sseReader reads the events of an SSE stream. It keeps the data lines
// of each event, joined by "\n", and ignores comments and other fields.
type sseReader struct {
	r     *bufio.Reader
	limit int
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
			return ev.result()
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
