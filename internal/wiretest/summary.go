package wiretest

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/acpkit/acprpc"
)

// summary is what a Ledger counts of one valid line.
type summary struct {
	kind     lineKind
	id       []byte // nil for a notification
	method   string
	cancelOf []byte // a $/cancel_request's requestId
	result   []byte
	code     int64
}

type lineKind int

const (
	kindRequest lineKind = iota
	kindNotification
	kindResult
	kindError
)

// summarize reads the summary of a parsed line.
func summarize(m Msg) summary {
	s := summary{id: m.ID, method: m.Method, result: m.Result}
	switch {
	case m.IsRequest():
		s.kind = kindRequest
	case m.IsNotification():
		s.kind = kindNotification
		if m.Method == acprpc.MethodCancelRequest {
			s.cancelOf = m.ParamMember("requestId")
		}
	case m.Error != nil:
		s.kind, s.code = kindError, m.Error.Code
	default:
		s.kind = kindResult
	}
	return s
}

// scan summarizes a line without building a Msg. Lines shaped as a Conn
// writes them (members in the Conn's order, IDs of plain digits or plain
// strings) are read by their shape, so that a soak of millions of lines is
// not slowed by decoding; anything else goes through Parse.
func scan(line []byte) (summary, error) {
	if s, ok := scanShaped(line); ok {
		return s, nil
	}
	m, err := Parse(string(line))
	if err != nil {
		return summary{}, err
	}
	return summarize(m), nil
}

var (
	shapeHead   = []byte(`{"jsonrpc":"2.0",`)
	shapeID     = []byte(`"id":`)
	shapeMethod = []byte(`"method":"`)
	shapeParams = []byte(`,"params":`)
	shapeResult = []byte(`"result":`)
	shapeError  = []byte(`"error":`)
	shapeCode   = []byte(`{"code":`)
	shapeCancel = []byte(`{"requestId":`)
)

func scanShaped(line []byte) (summary, bool) {
	rest, ok := bytes.CutPrefix(line, shapeHead)
	if !ok {
		return summary{}, false
	}
	var s summary
	if r, ok := bytes.CutPrefix(rest, shapeID); ok {
		i := bytes.IndexByte(r, ',')
		if i <= 0 || !plainID(r[:i]) {
			return s, false
		}
		s.id, rest = r[:i], r[i+1:]
		if r, ok := bytes.CutPrefix(rest, shapeResult); ok {
			s.kind, s.result = kindResult, r[:max(len(r)-1, 0)]
			return s, closes(r) && json.Valid(s.result)
		}
		if r, ok := bytes.CutPrefix(rest, shapeError); ok {
			s.kind = kindError
			return s, closes(r) && json.Valid(r[:len(r)-1]) && readCode(r, &s.code)
		}
		if string(s.id) == "null" {
			return s, false // a request's ID is never null
		}
	}
	r, ok := bytes.CutPrefix(rest, shapeMethod)
	if !ok {
		return s, false
	}
	j := bytes.IndexByte(r, '"')
	if j <= 0 || !plainASCII(r[:j]) {
		return s, false
	}
	s.method, r = string(r[:j]), r[j+1:]
	s.kind = kindRequest
	if s.id == nil {
		s.kind = kindNotification
	}
	if string(r) == "}" {
		return s, true
	}
	params, ok := bytes.CutPrefix(r, shapeParams)
	if !ok || !closes(params) || !json.Valid(params[:len(params)-1]) {
		return s, false
	}
	params = params[:len(params)-1]
	if s.kind == kindNotification && s.method == acprpc.MethodCancelRequest {
		id, ok := bytes.CutPrefix(params, shapeCancel)
		if !ok || !closes(id) || !plainID(id[:len(id)-1]) {
			return s, false
		}
		s.cancelOf = id[:len(id)-1]
	}
	return s, true
}

// closes reports whether b ends the message's object.
func closes(b []byte) bool { return len(b) > 1 && b[len(b)-1] == '}' }

// readCode reads the code of an error object that starts with it.
func readCode(obj []byte, code *int64) bool {
	r, ok := bytes.CutPrefix(obj, shapeCode)
	if !ok {
		return false
	}
	end := bytes.IndexAny(r, ",}")
	if end <= 0 {
		return false
	}
	n, err := strconv.ParseInt(string(r[:end]), 10, 64)
	*code = n
	return err == nil
}

// plainID reports whether id is null, an integer, or a string with no
// quote, backslash or comma in it: text whose end a comma marks.
func plainID(id []byte) bool {
	if string(id) == "null" {
		return true
	}
	if len(id) >= 2 && id[0] == '"' && id[len(id)-1] == '"' {
		inner := id[1 : len(id)-1]
		return plainASCII(inner) && !bytes.ContainsAny(inner, "\",")
	}
	digits := bytes.TrimPrefix(id, []byte("-"))
	if len(digits) == 0 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainASCII reports whether b is printable ASCII without a backslash: a
// string's body that JSON reads as it stands.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
	}
	return true
}

// markers are ACP's cancellation markers, as the Conn writes them.
var markers = func() [][]byte {
	var out [][]byte
	for _, m := range acprpc.ACPCancelMarkers(acprpc.ProtocolV1) {
		var b bytes.Buffer
		if json.Compact(&b, m) == nil {
			out = append(out, b.Bytes())
		}
	}
	return out
}()

func isMarker(result []byte) bool {
	for _, m := range markers {
		if bytes.Equal(result, m) {
			return true
		}
	}
	return false
}
