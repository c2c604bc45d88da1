package wire

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Kind says what a message carries.
type Kind uint8

// The kinds of usable message.
const (
	Request Kind = iota + 1
	Notification
	Response
)

// The JSON-RPC codes of the answers a Problem is owed.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
)

// Message is one parsed message. Every byte slice points into the bytes
// parsed, so the raw ID and params can be handed on without copying as long
// as those bytes are not reused.
type Message struct {
	Kind    Kind
	ID      []byte // raw JSON of an ID this side carries (see ValidID), nil for notifications
	Method  string
	Params  []byte // raw JSON, nil when absent
	Result  []byte // raw JSON, for responses
	Error   []byte // raw JSON, for error responses
	Scope   string // the string value of params' Reader.Scope member, if it has one
	Invalid string // why a response cannot be taken as an answer, if it cannot
	Size    int    // the message's length: what holding it holds
}

// Problem is the answer owed to a message that is not usable. ID is the
// raw ID when one could be read, so that the peer can match the answer;
// the answer to a Problem carries ID, or null.
type Problem struct {
	Code int64
	Msg  string
	ID   []byte
}

var (
	version20   = []byte(`"2.0"`)
	jsonNull    = []byte("null")
	lineMissing = "the message has neither a method nor a result or error"
)

// Reader reads the messages of one connection, in the order read, as its
// protocol asks: which member of params scopes a message (the key the
// protocol groups requests by), and which method names to share. Its zero
// value picks up no member and shares no name.
type Reader struct {
	// Scope names the params member whose string value a message carries
	// as Message.Scope; "" picks up none.
	Scope string
	// Names are the method names a message takes as they are, instead of a
	// copy of its own: a request or notification then allocates nothing for
	// its name. Only read, it may be shared.
	Names map[string]string

	last string // the Scope of the last message read
}

// Parse validates a message as JSON and classifies it in a single pass,
// with a zero Reader: the top-level object's members are located without
// decoding them. It returns the message, or the problem that makes it
// unusable.
func Parse(msg []byte) (Message, *Problem) {
	var r Reader
	return r.Read(msg)
}

// Read is Parse with the Reader's protocol: a params object's Scope member
// is picked up on the way, and a message of the same scope as the last one
// read takes that string instead of a copy of its own (a connection's
// messages mostly name one scope, so its read loop allocates nothing for
// them).
func (r *Reader) Read(msg []byte) (Message, *Problem) {
	s := scanner{b: msg}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '{' {
		m, bad := s.topObject(r)
		m.Size = len(msg)
		if m.Scope != "" {
			r.last = m.Scope
		}
		return m, bad
	}
	if err := s.value(0, nil); err != nil || !s.atEnd() {
		return Message{}, &Problem{Code: CodeParseError, Msg: "Parse error: the message is not valid JSON"}
	}
	if s.first() == '[' {
		return Message{}, &Problem{Code: CodeInvalidRequest, Msg: "Invalid request: batches are not supported"}
	}
	return Message{}, &Problem{Code: CodeInvalidRequest, Msg: "Invalid request: a message must be a JSON object"}
}

// members holds the spans of the top-level members that matter.
type members struct {
	id, method, params, result, errObj, version []byte
	scope                                       capture // params' scope member
	scopeName                                   string
}

// Valid reports whether b is one JSON value, as json.Valid does, for a
// value nested less deeply than a message may be (deeper ones are
// reported invalid). It is the parse's own scan, which skips the plain runs
// of a long string eight bytes at a time.
func Valid(b []byte) bool {
	s := scanner{b: b}
	s.ws()
	return s.value(0, nil) == nil && s.atEnd()
}

// Member returns the raw value of obj's top-level member name, or nil when
// obj is not a valid object or has no such member.
func Member(obj []byte, name string) []byte {
	s := scanner{b: obj}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil
	}
	c := capture{name: name}
	if s.object(0, nil, &c) != nil || !s.atEnd() {
		return nil
	}
	return c.span
}

func (s *scanner) topObject(r *Reader) (Message, *Problem) {
	m := members{scopeName: r.Scope}
	if err := s.object(0, &m, nil); err != nil || !s.atEnd() {
		return Message{}, &Problem{Code: CodeParseError, Msg: "Parse error: the message is not valid JSON"}
	}
	return m.classify(r)
}

// keyIs reports whether key, a member name as JSON text (quotes included),
// names want (without them), whether or not it is spelled with escapes. It
// allocates only for an escaped key.
func keyIs(key []byte, want string) bool {
	if len(key) == len(want)+2 && string(key[1:len(key)-1]) == want {
		return true
	}
	return bytes.IndexByte(key, '\\') >= 0 && Unquote(key) == want
}

// slot says where a top-level member's span goes, and, for params, which
// member inside it to record.
func (m *members) slot(key []byte) (span *[]byte, inner *capture) {
	switch string(key) { // no allocation: the compiler compares in place
	case `"id"`:
		return &m.id, nil
	case `"method"`:
		return &m.method, nil
	case `"params"`:
		if m.scopeName == "" {
			return &m.params, nil
		}
		m.scope = capture{name: m.scopeName} // a repeated params member starts afresh
		return &m.params, &m.scope
	case `"result"`:
		return &m.result, nil
	case `"error"`:
		return &m.errObj, nil
	case `"jsonrpc"`:
		return &m.version, nil
	}
	// An escaped spelling of a known key. The decoded name is matched once:
	// a name still holding a backslash is no known key, and decoding it
	// again would take the literal key \u0069d for "id".
	if bytes.IndexByte(key, '\\') >= 0 {
		if name := Unquote(key); strings.IndexByte(name, '\\') < 0 {
			return m.slot([]byte(`"` + name + `"`))
		}
	}
	return nil, nil
}

// classify turns the envelope's members into a message, or says what is
// wrong with it in JSON-RPC terms.
func (m *members) classify(r *Reader) (Message, *Problem) {
	invalid := func(msg string, id []byte) (Message, *Problem) {
		return Message{}, &Problem{Code: CodeInvalidRequest, Msg: "Invalid request: " + msg, ID: id}
	}
	if m.isResponse() {
		return m.response(), nil
	}
	carried := m.id
	if carried != nil && !ValidID(carried) {
		carried = nil
	}
	if m.version != nil && !isVersion20(m.version) {
		return invalid(`"jsonrpc" must be "2.0"`, carried)
	}
	if m.method == nil {
		return invalid(lineMissing, carried) // neither a request nor an answer: the peer can match the error when its ID is usable
	}
	if m.method[0] != '"' {
		return invalid("the method must be a string", carried)
	}
	msg := Message{Method: r.methodName(m.method), Params: m.params}
	if len(m.params) > 0 && m.params[0] != '{' && m.params[0] != '[' && !IsNull(m.params) {
		return invalid("params must be an object or an array", carried)
	}
	if scope := m.scope.span; len(scope) > 0 && scope[0] == '"' {
		msg.Scope = unquoteAs(scope, r.last)
	}
	if m.id == nil {
		msg.Kind = Notification
		return msg, nil
	}
	if carried == nil {
		return invalid("the id must be a string or an integer that fits in 64 bits", nil)
	}
	msg.Kind, msg.ID = Request, m.id
	return msg, nil
}

// methodName is Unquote for a method name checked by the scanner: one of
// the Reader's Names is shared, any other is decoded and copied.
func (r *Reader) methodName(raw []byte) string {
	if name, ok := r.Names[string(raw[1:len(raw)-1])]; ok { // the conversion in a lookup does not allocate
		return name
	}
	return Unquote(raw)
}

// isVersion20 reports whether v is the JSON string "2.0", however spelled.
func isVersion20(v []byte) bool {
	return bytes.Equal(v, version20) || v[0] == '"' && Unquote(v) == "2.0"
}

// isResponse reports whether the message is an answer: it has a result or
// an error member and no method. A null method counts as none, as peers that
// write every member send it. An answer is never answered, whatever is
// wrong with it: the ID it carries is one of ours, and an error answer with
// it would reach the peer as the answer to its own request of that ID.
func (m *members) isResponse() bool {
	return (m.method == nil || IsNull(m.method)) && (m.result != nil || m.errObj != nil)
}

// response reads an answer. A null error beside a result, or a null result
// beside an error, is a member written for its own sake and means nothing.
// An answer that breaks the protocol is marked invalid: it still ends the
// call it names, with an error that says why. Only an error answer may
// name no request ("id": null, or none): it says the peer could not read a
// message of ours.
func (m *members) response() Message {
	msg := Message{Kind: Response, Result: m.result, Error: m.errObj}
	if ValidID(m.id) { // one with an unusable ID only reaches the log
		msg.ID = m.id
	}
	if msg.Error != nil && IsNull(msg.Error) {
		msg.Error = nil
	}
	if msg.Error != nil && msg.Result != nil && IsNull(msg.Result) {
		msg.Result = nil
	}
	switch {
	case m.version != nil && !isVersion20(m.version):
		msg.Invalid = `"jsonrpc" must be "2.0"`
	case msg.Result != nil && msg.Error != nil:
		msg.Invalid = "it has both a result and an error"
	case msg.Result == nil && msg.Error == nil:
		msg.Invalid = "its error is null and it has no result"
	case msg.ID == nil && m.id != nil && !IsNull(m.id):
		msg.Invalid = "its id is neither a string nor an integer of 64 bits"
	case msg.ID == nil && msg.Result != nil:
		msg.Invalid = "it has a result and no id"
	}
	return msg
}

// IsNull reports whether v is the JSON null.
func IsNull(v []byte) bool { return bytes.Equal(v, jsonNull) }

// unquoteAs is Unquote, returning known instead of a copy when raw spells
// it without escapes.
func unquoteAs(raw []byte, known string) string {
	if inner := raw[1 : len(raw)-1]; string(inner) == known && bytes.IndexByte(inner, '\\') < 0 {
		return known
	}
	return Unquote(raw)
}

// Unquote decodes a JSON string already checked by the scanner, copying
// only when it has escapes.
func Unquote(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
