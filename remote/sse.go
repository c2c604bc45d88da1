package remote

import (
	"bufio"
	"bytes"
	"io"
	"net/http"

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
// client.
func writeEvent(w http.ResponseWriter, rc *http.ResponseController, msg []byte) error {
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
// limit is reported as a *acprpc.MessageTooLargeError, and the stream
// reads on.
func (s *sseReader) next() ([]byte, error) {
	var data []byte
	has, size := false, 0
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && has {
				err = io.ErrUnexpectedEOF // an event cut short is not delivered
			}
			return nil, err
		}
		if len(line) == 0 {
			switch {
			case !has:
				continue
			case size > s.limit:
				return nil, &acprpc.MessageTooLargeError{Size: size, Limit: s.limit, Prefix: data}
			}
			return data, nil
		}
		value, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // a comment, or a field ACP does not use
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if has {
			size++
			if size <= s.limit {
				data = append(data, '\n')
			}
		}
		size += len(value)
		if size <= s.limit {
			data = append(data, value...)
		} else if len(data) < prefixKept {
			data = append(data, value[:min(len(value), prefixKept-len(data))]...)
		}
		has = true
	}
}

// readLine returns the next line without its end ("\n" or "\r\n"), valid
// until the next call. A line longer than the reader's buffer is gathered,
// up to the limit; the rest is discarded.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = s.r.ReadSlice('\n')
			if len(long) <= s.limit+len("data: ") {
				long = append(long, line...)
			}
		}
		line = long
	}
	if err != nil && !(err == io.EOF && len(line) > 0) {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}
