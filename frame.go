package acprpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
)

// frame is one outgoing message, encoded as compact JSON with no line end:
// framing is the transport's. Frames are pooled: the writer returns each to
// the pool once the transport has taken its bytes.
type frame struct {
	buf    bytes.Buffer
	enc    *json.Encoder
	answer bool // an answer to the peer: counts against the writer's limit
	info   frameInfo
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
	f.info = frameInfo{}
	framePool.Put(f)
}

// encode appends v as JSON, without the encoder's trailing newline.
func (f *frame) encode(v any) error {
	if raw, ok := v.(json.RawMessage); ok && raw != nil {
		return f.encodeRaw(raw)
	}
	if err := f.enc.Encode(v); err != nil {
		return err
	}
	f.buf.Truncate(f.buf.Len() - 1)
	return nil
}

// errRawInvalid is why a json.RawMessage cannot be sent.
var errRawInvalid = errors.New("json.RawMessage is not valid JSON")

// encodeRaw appends raw, checked and compacted: whatever a caller hands over
// goes out as one JSON value on one line. Compact JSON, the common case (our
// own markers, params passed on as received), is checked in one pass and
// copied as is.
func (f *frame) encodeRaw(raw json.RawMessage) error {
	s := scanner{b: raw}
	s.ws()
	if s.value(0, nil) != nil || !s.atEnd() {
		return errRawInvalid
	}
	if !s.spaced {
		f.buf.Write(raw)
		return nil
	}
	return json.Compact(&f.buf, raw)
}

// begin starts a message: {"jsonrpc":"2.0", then the ID member if any.
func (f *frame) begin(id []byte) {
	f.buf.WriteString(`{"jsonrpc":"2.0"`)
	if id != nil {
		f.buf.WriteString(`,"id":`)
		f.info.idStart = f.buf.Len()
		f.buf.Write(id)
		f.info.idEnd = f.buf.Len()
	}
}

// requestFrame builds a request (id set) or notification line.
func requestFrame(id []byte, method string, params any) (*frame, error) {
	f := getFrame()
	f.info.kind, f.info.method = KindRequest, method
	if id == nil {
		f.info.kind = KindNotification
	}
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
	f.buf.WriteString("}")
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
	f.info.kind = KindResult
	f.begin(id)
	f.buf.WriteString(`,"result":`)
	if err := f.encode(result); err != nil {
		f.release()
		return nil, err
	}
	f.buf.WriteString("}")
	return f, nil
}

// errorFrame builds an error answer; a nil id is written as null, as
// JSON-RPC requires when the request's ID could not be read.
func errorFrame(id []byte, e *Error) *frame {
	if id == nil {
		id = jsonNull
	}
	f := getFrame()
	f.info.kind, f.info.err = KindError, e
	f.begin(id)
	f.buf.WriteString(`,"error":`)
	if err := f.encode(e); err != nil { // only Data can fail; drop it
		f.buf.Reset()
		f.release()
		return errorFrame(id, &Error{Code: e.Code, Message: e.Message})
	}
	f.buf.WriteString("}")
	return f
}
