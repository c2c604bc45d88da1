package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// Frame builds one outgoing message as compact JSON with no line end:
// framing is the transport's. A Frame is used in place (its encoder writes
// to its own Buf) and is not copied once used.
type Frame struct {
	Buf            bytes.Buffer
	IDStart, IDEnd int // the ID is Buf's bytes [IDStart:IDEnd], when the message has one

	enc *json.Encoder
}

// ErrRawInvalid is why a json.RawMessage cannot be sent.
var ErrRawInvalid = errors.New("json.RawMessage is not valid JSON")

// ParamsKindError is why params cannot be sent: JSON-RPC's params are a
// JSON object or array, and these encode to a value of another Kind.
type ParamsKindError struct {
	Kind string // "a string", "a number", "a boolean" or "null"
}

func (e *ParamsKindError) Error() string {
	return "params must be a JSON object or array, not " + e.Kind
}

// jsonKind names the kind of the JSON value that starts with first.
func jsonKind(first byte) string {
	switch first {
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// Reset empties the frame for another message.
func (f *Frame) Reset() {
	f.Buf.Reset()
	f.IDStart, f.IDEnd = 0, 0
}

// Encode appends v as JSON, without the encoder's trailing newline. A
// json.RawMessage goes out checked and compacted, as EncodeRaw says; other
// values as encoding/json writes them, HTML characters unescaped, so that
// params and results go out as the caller wrote them.
func (f *Frame) Encode(v any) error {
	if raw, ok := v.(json.RawMessage); ok && raw != nil {
		return f.EncodeRaw(raw)
	}
	if f.enc == nil {
		f.enc = json.NewEncoder(&f.Buf)
		f.enc.SetEscapeHTML(false)
	}
	if err := f.enc.Encode(v); err != nil {
		return err
	}
	f.Buf.Truncate(f.Buf.Len() - 1)
	return nil
}

// EncodeRaw appends raw, checked and compacted: whatever a caller hands
// over goes out as one JSON value on one line. Compact JSON, the common case
// (our own markers, params passed on as received), is checked in one pass
// and copied as is.
func (f *Frame) EncodeRaw(raw []byte) error {
	s := scanner{b: raw}
	s.ws()
	if s.value(0, nil) != nil || !s.atEnd() {
		return ErrRawInvalid
	}
	if !s.spaced {
		f.Buf.Write(raw)
		return nil
	}
	return json.Compact(&f.Buf, raw)
}

// Begin starts a message: {"jsonrpc":"2.0", then the ID member if id is
// not nil.
func (f *Frame) Begin(id []byte) {
	f.Buf.WriteString(`{"jsonrpc":"2.0"`)
	if id != nil {
		f.Buf.WriteString(`,"id":`)
		f.IDStart = f.Buf.Len()
		f.Buf.Write(id)
		f.IDEnd = f.Buf.Len()
	}
}

// String appends s as a JSON string.
func (f *Frame) String(s string) {
	switch plainASCII(s) {
	case asIs:
		f.Buf.WriteByte('"')
		f.Buf.WriteString(s)
		f.Buf.WriteByte('"')
	case quoted:
		f.Buf.Write(strconv.AppendQuote(f.Buf.AvailableBuffer(), s))
	default:
		_ = f.Encode(s) // Go's quoting of other bytes is not JSON's
	}
}

// The ways String writes a string.
const (
	asIs    = iota // printable ASCII, no quote or backslash: nothing to escape
	quoted         // printable ASCII: strconv escapes '"' and '\\' as JSON does
	encoded        // anything else: encoding/json writes it
)

// plainASCII says how String writes s: as it is, quoted by strconv, whose
// quoting of printable ASCII is also JSON's, or by encoding/json.
func plainASCII(s string) int {
	how := asIs
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e:
			return encoded
		case c == '"' || c == '\\':
			how = quoted
		}
	}
	return how
}

// Request builds a request (id set) or a notification (id nil); params nil
// leaves the member out.
func (f *Frame) Request(id []byte, method string, params any) error {
	f.Begin(id)
	f.Buf.WriteString(`,"method":`)
	f.String(method)
	if params != nil {
		f.Buf.WriteString(`,"params":`)
		start := f.Buf.Len()
		if err := f.Encode(params); err != nil {
			return err
		}
		if first := f.Buf.Bytes()[start]; first != '{' && first != '[' {
			return &ParamsKindError{Kind: jsonKind(first)}
		}
	}
	f.Buf.WriteString("}")
	return nil
}

// Result builds a success answer.
func (f *Frame) Result(id []byte, result any) error {
	f.Begin(id)
	f.Buf.WriteString(`,"result":`)
	if err := f.Encode(result); err != nil {
		return err
	}
	f.Buf.WriteString("}")
	return nil
}

// ErrorAnswer builds an error answer whose error member is e encoded; a
// nil id is written as null, as JSON-RPC requires when the request's ID
// could not be read.
func (f *Frame) ErrorAnswer(id []byte, e any) error {
	if id == nil {
		id = jsonNull
	}
	f.Begin(id)
	f.Buf.WriteString(`,"error":`)
	if err := f.Encode(e); err != nil {
		return err
	}
	f.Buf.WriteString("}")
	return nil
}
