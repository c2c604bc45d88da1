package acprpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
)

// msgKind says what a message carries.
type msgKind uint8

const (
	kindRequest msgKind = iota + 1
	kindNotification
	kindResponse
)

// message is one parsed message. Every byte slice points into the bytes the
// transport handed over, which are never reused, so the raw ID and params
// can be handed on without copying.
type message struct {
	kind      msgKind
	id        []byte // raw JSON of the ID, nil for notifications
	method    string
	params    []byte // raw JSON, nil when absent
	result    []byte // raw JSON, for responses
	errObj    []byte // raw JSON, for error responses
	sessionID string // params.sessionId when it is a string
	invalid   string // why a response cannot be taken as an answer, if it cannot
	size      int    // the message's length: what holding it holds
}

// messageError is the answer owed to a message that is not usable. id is
// the raw ID when one could be read, so the peer can match the answer.
type messageError struct {
	code int64
	msg  string
	id   []byte
}

// maxDepth bounds nesting so that a hostile message cannot exhaust the stack;
// encoding/json uses the same bound.
const maxDepth = 10000

var (
	errSyntax   = errors.New("invalid JSON")
	errTooDeep  = errors.New("JSON nested too deeply")
	version20   = []byte(`"2.0"`)
	jsonNull    = []byte("null")
	lineMissing = "the message has neither a method nor a result or error"
)

// parseMessage validates a message as JSON and classifies it in a single
// pass: the top-level object's members are located without decoding them,
// and a params object's sessionId is picked up on the way.
func parseMessage(msg []byte) (message, *messageError) {
	s := scanner{b: msg}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '{' {
		m, bad := s.topObject()
		m.size = len(msg)
		return m, bad
	}
	if err := s.value(0, nil); err != nil || !s.atEnd() {
		return message{}, &messageError{code: CodeParseError, msg: "Parse error: the message is not valid JSON"}
	}
	if s.first() == '[' {
		return message{}, &messageError{code: CodeInvalidRequest, msg: "Invalid request: batches are not supported"}
	}
	return message{}, &messageError{code: CodeInvalidRequest, msg: "Invalid request: a message must be a JSON object"}
}

type scanner struct {
	b      []byte
	i      int
	spaced bool // white space was skipped between tokens
}

func (s *scanner) first() byte {
	for _, c := range s.b {
		if !isSpace(c) {
			return c
		}
	}
	return 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) ws() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
		s.spaced = true
	}
}

func (s *scanner) atEnd() bool {
	s.ws()
	return s.i == len(s.b)
}

// members holds the spans of the top-level members that matter.
type members struct {
	id, method, params, result, errObj, version []byte
	session                                     capture // params.sessionId
}

// capture records the span of one named member of an object; key is the
// member's name as JSON text, quotes included.
type capture struct {
	key  string
	span []byte
}

// member returns the raw value of obj's top-level member name, or nil when
// obj is not a valid object or has no such member.
func member(obj []byte, name string) []byte {
	s := scanner{b: obj}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil
	}
	c := capture{key: `"` + name + `"`}
	if s.object(0, nil, &c) != nil || !s.atEnd() {
		return nil
	}
	return c.span
}

func (s *scanner) topObject() (message, *messageError) {
	var m members
	if err := s.object(0, &m, nil); err != nil || !s.atEnd() {
		return message{}, &messageError{code: CodeParseError, msg: "Parse error: the message is not valid JSON"}
	}
	return m.classify()
}

// object scans an object at s.i. With top set it records the envelope's
// members; with c set it records the member c names.
func (s *scanner) object(depth int, top *members, c *capture) error {
	if depth >= maxDepth {
		return errTooDeep
	}
	s.i++ // '{'
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		keyStart := s.i
		if err := s.str(); err != nil {
			return err
		}
		key := s.b[keyStart:s.i]
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errSyntax
		}
		s.i++
		s.ws()
		valStart := s.i
		var into *[]byte
		var inner *capture
		switch {
		case top != nil:
			into, inner = top.slot(key)
		case c != nil && keyIs(key, c.key):
			into = &c.span
		}
		if err := s.value(depth+1, inner); err != nil {
			return err
		}
		if into != nil {
			*into = s.b[valStart:s.i]
		}
		s.ws()
		if s.i >= len(s.b) {
			return errSyntax
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// keyIs reports whether key, a member name as JSON text, names want (also
// quoted), whether or not it is spelled with escapes.
func keyIs(key []byte, want string) bool {
	if string(key) == want {
		return true
	}
	return bytes.IndexByte(key, '\\') >= 0 && `"`+unquote(key)+`"` == want
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
		m.session = capture{key: `"sessionId"`} // a repeated params member starts afresh
		return &m.params, &m.session
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
		if name := unquote(key); strings.IndexByte(name, '\\') < 0 {
			return m.slot([]byte(`"` + name + `"`))
		}
	}
	return nil, nil
}

// value validates and skips one JSON value. With c set, an object's member
// named by c is recorded.
func (s *scanner) value(depth int, c *capture) error {
	if s.i >= len(s.b) {
		return errSyntax
	}
	switch ch := s.b[s.i]; {
	case ch == '{':
		return s.object(depth, nil, c)
	case ch == '[':
		return s.array(depth)
	case ch == '"':
		return s.str()
	case ch == '-' || isDigit(ch):
		return s.number()
	case ch == 't':
		return s.literal("true")
	case ch == 'f':
		return s.literal("false")
	case ch == 'n':
		return s.literal("null")
	}
	return errSyntax
}

func (s *scanner) array(depth int) error {
	if depth >= maxDepth {
		return errTooDeep
	}
	s.i++ // '['
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if err := s.value(depth+1, nil); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errSyntax
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// str skips a string, checking escapes and rejecting raw control
// characters. The plain runs between them, most of a long string, are
// skipped eight bytes at a time.
func (s *scanner) str() error {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return errSyntax
	}
	s.i++
	for {
		s.i += plainRun(s.b[s.i:])
		if s.i >= len(s.b) {
			return errSyntax
		}
		switch s.b[s.i] {
		case '"':
			s.i++
			return nil
		case '\\':
			if err := s.escape(); err != nil {
				return err
			}
		default: // a control character
			return errSyntax
		}
	}
}

// plainRun is the length of b's leading run of bytes a string holds as
// they are: no quote, backslash or control character.
func plainRun(b []byte) int {
	i := 0
	for ; i+8 <= len(b) && !hasSpecial(binary.LittleEndian.Uint64(b[i:])); i += 8 {
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
			break
		}
	}
	return i
}

// hasSpecial reports whether one of x's eight bytes is a quote, a backslash
// or a control character, with the classic test for a zero byte:
// (v - 0x01…) & ^v & 0x80… is set exactly when some byte of v is zero (and
// when some byte is below n, with n × 0x01… in place of 0x01…).
func hasSpecial(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	below := (x - ones*0x20) & ^x
	return (below|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0
}

func (s *scanner) escape() error {
	s.i++ // '\\'
	if s.i >= len(s.b) {
		return errSyntax
	}
	switch s.b[s.i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i++
		return nil
	case 'u':
		if s.i+4 >= len(s.b) {
			return errSyntax
		}
		for _, h := range s.b[s.i+1 : s.i+5] {
			if !isHex(h) {
				return errSyntax
			}
		}
		s.i += 5
		return nil
	}
	return errSyntax
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && isDigit(s.b[s.i]) {
		s.i++
	}
	return s.i - start
}

// number follows the JSON grammar: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?
func (s *scanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i >= len(s.b) {
		return errSyntax
	}
	if s.b[s.i] == '0' {
		s.i++
	} else if s.digits() == 0 {
		return errSyntax
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return errSyntax
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return errSyntax
		}
	}
	return nil
}

func (s *scanner) literal(word string) error {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return errSyntax
	}
	s.i += len(word)
	return nil
}

// classify turns the envelope's members into a message, or says what is
// wrong with it in JSON-RPC terms.
func (m *members) classify() (message, *messageError) {
	invalid := func(msg string, id []byte) (message, *messageError) {
		return message{}, &messageError{code: CodeInvalidRequest, msg: "Invalid request: " + msg, id: id}
	}
	if m.isResponse() {
		return m.response(), nil
	}
	carried := m.id
	if carried != nil && !validID(carried) {
		carried = nil
	}
	if m.version != nil && !isVersion20(m.version) {
		return invalid(`"jsonrpc" must be "2.0"`, carried)
	}
	if m.method == nil {
		var id []byte // neither a request nor an answer: the peer can match the error when its ID is usable
		if validID(m.id) {
			id = m.id
		}
		return invalid(lineMissing, id)
	}
	if m.method[0] != '"' {
		return invalid("the method must be a string", carried)
	}
	msg := message{method: unquote(m.method), params: m.params}
	if len(m.params) > 0 && m.params[0] != '{' && m.params[0] != '[' && !isNull(m.params) {
		return invalid("params must be an object or an array", carried)
	}
	if sid := m.session.span; len(sid) > 0 && sid[0] == '"' {
		msg.sessionID = unquote(sid)
	}
	if m.id == nil {
		msg.kind = kindNotification
		return msg, nil
	}
	if carried == nil {
		return invalid("the id must be a string or an integer that fits in 64 bits", nil)
	}
	msg.kind, msg.id = kindRequest, m.id
	return msg, nil
}

// isVersion20 reports whether v is the JSON string "2.0", however spelled.
func isVersion20(v []byte) bool {
	return bytes.Equal(v, version20) || v[0] == '"' && unquote(v) == "2.0"
}

// isResponse reports whether the message is an answer: it has a result or
// an error member and no method. A null method counts as none, as peers that
// write every member send it. An answer is never answered, whatever is
// wrong with it: the ID it carries is one of ours, and an error answer with
// it would reach the peer as the answer to its own request of that ID.
func (m *members) isResponse() bool {
	return (m.method == nil || isNull(m.method)) && (m.result != nil || m.errObj != nil)
}

// response reads an answer. A null error beside a result, or a null result
// beside an error, is a member written for its own sake and means nothing.
// An answer that breaks the protocol is marked invalid: it still ends the
// call it names, with an error that says why.
func (m *members) response() message {
	msg := message{kind: kindResponse, result: m.result, errObj: m.errObj}
	if validID(m.id) { // one with an unusable ID only reaches the log
		msg.id = m.id
	}
	if msg.errObj != nil && isNull(msg.errObj) {
		msg.errObj = nil
	}
	if msg.errObj != nil && msg.result != nil && isNull(msg.result) {
		msg.result = nil
	}
	switch {
	case m.version != nil && !isVersion20(m.version):
		msg.invalid = `"jsonrpc" must be "2.0"`
	case msg.result != nil && msg.errObj != nil:
		msg.invalid = "it has both a result and an error"
	case msg.result == nil && msg.errObj == nil:
		msg.invalid = "its error is null and it has no result"
	}
	return msg
}

func isNull(v []byte) bool { return bytes.Equal(v, jsonNull) }

// peekID reads what it can of the start of an over-long message: the ID, if a
// complete one comes before the cut, and whether the message is an answer.
func peekID(prefix []byte) (id []byte, isResponse bool) {
	s := scanner{b: prefix}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil, false
	}
	s.i++
	for {
		s.ws()
		keyStart := s.i
		if s.str() != nil {
			return id, isResponse
		}
		key := string(prefix[keyStart:s.i])
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return id, isResponse
		}
		s.i++
		s.ws()
		valStart := s.i
		err := s.value(1, nil)
		switch key {
		case `"result"`, `"error"`:
			isResponse = true
		case `"id"`:
			if err == nil && validID(prefix[valStart:s.i]) {
				id = prefix[valStart:s.i]
			}
		}
		s.ws()
		if err != nil || s.i >= len(s.b) || s.b[s.i] != ',' {
			return id, isResponse
		}
		s.i++
	}
}
