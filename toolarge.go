package acprpc

import (
	"bytes"
	"fmt"
)

// MessageTooLargeError is what a Transport's Recv returns for a message over
// its size limit, which it dropped without holding it in memory. The Conn
// answers it -32600 with the message's ID, or fails our call that it
// answers, and reads the next message.
//
// A transport fills it by passing each part of the message through Write as
// it reads and drops it: Write finds the top-level "id" and whether the
// message is an answer wherever they are in the message (JSON does not
// order members), keeping only the ID. A transport that keeps only the
// message's first bytes can set Prefix instead, and the Conn looks for the
// ID there.
type MessageTooLargeError struct {
	Size  int // the message's size in bytes, as far as it was read
	Limit int // the limit it broke

	// ID is the raw JSON of the message's top-level "id", when it has one
	// this library can carry (a string or an integer of 64 bits).
	ID []byte
	// IsResponse says whether the message is an answer: a top-level
	// "result" or "error" member, and no method.
	IsResponse bool
	// Prefix is the message's first bytes, if the transport kept them. When
	// nothing was passed through Write and ID is nil, the Conn reads the ID
	// from here, as far as it goes.
	Prefix []byte

	scan envelopeScan
}

// Error says how large the message was and what the limit is.
func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("message of %d bytes exceeds the limit of %d", e.Size, e.Limit)
}

// Write scans the next part of the dropped message and adds its length to
// Size. It keeps none of p, never fails, and costs one pass over p.
func (e *MessageTooLargeError) Write(p []byte) (int, error) {
	e.Size += len(p)
	e.scan.feed(p)
	e.ID, e.IsResponse = e.scan.id, e.scan.isResponse()
	return len(p), nil
}

// envelope is what the Conn needs of a dropped message: its ID and whether
// it answers one of our calls.
func (e *MessageTooLargeError) envelope() (id []byte, isResponse bool) {
	id, isResponse = e.ID, e.IsResponse
	if id == nil && !isResponse && !e.scan.fed && len(e.Prefix) > 0 {
		id, isResponse = peekID(e.Prefix)
	}
	if id != nil && !validID(id) {
		id = nil
	}
	return id, isResponse
}

// tooLargeOf is the error for a message over limit that is at hand whole:
// one a transport handed over without a limit of its own, or a line that
// fit in the Stream's read buffer (whose bytes the next read reuses, hence
// the copy).
func tooLargeOf(msg []byte, limit int) *MessageTooLargeError {
	e := &MessageTooLargeError{Limit: limit, Prefix: bytes.Clone(msg[:min(len(msg), prefixKept)])}
	_, _ = e.Write(msg)
	return e
}

// Bounds on what envelopeScan keeps: a key longer than keyKept (an escaped
// spelling of "result" takes 38 bytes) is no member it looks for, and an ID
// longer than idKept is not carried.
const (
	keyKept = 64
	idKept  = 4 << 10
)

// The top-level positions of envelopeScan.
const (
	atKey   uint8 = iota // a member's name, or the end of the object
	atColon              // the ':' after the name
	atValue              // the member's value
	atComma              // ',' or the end of the object
	atEnd                // the object ended, or the message is no object
)

// The members envelopeScan looks for.
const (
	memberOther uint8 = iota
	memberID
	memberMethod
	memberResult
	memberError
)

// envelopeScan follows a JSON message part by part, as a transport reads
// it, and finds its top-level "id", "method", "result" and "error" members.
// It holds its position (nesting depth, inside a string or not, after a
// backslash or not, where in the top-level object) and at most one
// top-level name or value of interest, never the message. It does not
// validate: a message that is not JSON gives what it gives, and an ID is
// checked before it is used.
type envelopeScan struct {
	fed      bool
	depth    int // 1 inside the top-level object
	pos      uint8
	inString bool
	escaped  bool   // the previous byte in a string was a backslash
	member   uint8  // the member whose value is being read
	kept     []byte // the top-level name, or the value of an id or method, being read
	keeping  bool   // kept is being filled (a name, or a value of interest)
	overflow bool   // kept outgrew its bound
	inScalar bool   // inside a top-level number or literal

	id                           []byte
	hasMethod, hasResult, hasErr bool
}

func (s *envelopeScan) isResponse() bool { return (s.hasResult || s.hasErr) && !s.hasMethod }

func (s *envelopeScan) feed(p []byte) {
	s.fed = true
	for i := 0; i < len(p) && s.pos != atEnd; {
		if s.inString {
			i = s.stringPart(p, i)
			continue
		}
		s.byteOutside(p[i])
		i++
	}
}

// stringPart consumes the string bytes of p from i, up to and including the
// closing quote if it is in p, and returns where it stopped.
func (s *envelopeScan) stringPart(p []byte, i int) int {
	for i < len(p) {
		if s.escaped {
			s.escaped = false
			s.keep(p[i : i+1])
			i++
			continue
		}
		n := plainRun(p[i:]) // up to a quote, a backslash or a control byte
		s.keep(p[i : i+n])
		i += n
		if i == len(p) {
			return i
		}
		c := p[i]
		s.keep(p[i : i+1])
		i++
		switch c {
		case '\\':
			s.escaped = true
		case '"':
			s.inString = false
			s.stringEnded()
			return i
		}
	}
	return i
}

// byteOutside handles one byte outside any string.
func (s *envelopeScan) byteOutside(c byte) {
	if s.depth == 0 {
		switch {
		case c == '{':
			s.depth, s.pos = 1, atKey
		case !isSpace(c):
			s.pos = atEnd // not an object: there is nothing to find
		}
		return
	}
	if s.inScalar {
		if c != ',' && c != '}' && c != ']' && !isSpace(c) {
			s.keep([]byte{c})
			return
		}
		s.inScalar = false
		s.valueEnded()
	}
	switch c {
	case '"':
		s.inString = true
		if s.depth == 1 {
			s.start(s.pos == atKey || s.pos == atValue && (s.member == memberID || s.member == memberMethod))
			s.keep([]byte{c})
		}
	case '{', '[':
		if s.depth == 1 && s.pos == atValue {
			s.start(false) // a nested value: no ID, and a method that is not null
			s.valueEnded()
		}
		s.depth++
	case '}', ']':
		s.depth--
		switch s.depth {
		case 1:
			s.pos = atComma
		case 0:
			s.pos = atEnd
		}
	case ':':
		if s.depth == 1 && s.pos == atColon {
			s.pos = atValue
		}
	case ',':
		if s.depth == 1 {
			s.pos = atKey
		}
	default:
		if s.depth == 1 && s.pos == atValue && !isSpace(c) {
			s.inScalar = true
			s.start(s.member == memberID || s.member == memberMethod)
			s.keep([]byte{c})
		}
	}
}

// start begins a top-level name or value, kept if keep is set.
func (s *envelopeScan) start(keep bool) {
	s.kept, s.keeping, s.overflow = s.kept[:0], keep, false
}

// keep adds b to what is kept, within its bound.
func (s *envelopeScan) keep(b []byte) {
	if !s.keeping || s.overflow {
		return
	}
	bound := idKept
	if s.pos == atKey {
		bound = keyKept
	}
	if len(s.kept)+len(b) > bound {
		s.overflow = true
		return
	}
	s.kept = append(s.kept, b...)
}

// stringEnded acts on the end of a string at the top level: a member's name
// or a string value.
func (s *envelopeScan) stringEnded() {
	if s.depth != 1 {
		return
	}
	if s.pos == atKey {
		s.member = memberOther
		if s.keeping && !s.overflow {
			s.member = memberNamed(s.kept)
		}
		s.pos = atColon
		return
	}
	s.valueEnded()
}

// valueEnded records the top-level value just read, for the member it
// belongs to.
func (s *envelopeScan) valueEnded() {
	if s.pos != atValue {
		return
	}
	complete := s.keeping && !s.overflow
	switch s.member {
	case memberID:
		s.id = nil // the last "id" decides, as in a message read whole
		if complete && validID(s.kept) && (s.kept[0] != '"' || isJSONString(s.kept)) {
			s.id = bytes.Clone(s.kept)
		}
	case memberMethod:
		s.hasMethod = !complete || !isNull(s.kept)
	case memberResult:
		s.hasResult = true
	case memberError:
		s.hasErr = true
	}
	s.keeping = false
	s.pos = atComma
}

// memberNamed says which member a top-level name (JSON text, quotes
// included) names, however it is spelled.
func memberNamed(key []byte) uint8 {
	if !isJSONString(key) {
		return memberOther
	}
	name := string(key[1 : len(key)-1])
	if bytes.IndexByte(key, '\\') >= 0 {
		name = unquote(key)
	}
	switch name {
	case "id":
		return memberID
	case "method":
		return memberMethod
	case "result":
		return memberResult
	case "error":
		return memberError
	}
	return memberOther
}

// isJSONString reports whether b is exactly one valid JSON string.
func isJSONString(b []byte) bool {
	s := scanner{b: b}
	return s.str() == nil && s.i == len(b)
}
