package wire

import "bytes"

// Bounds on what Envelope keeps: a key longer than keyKept (an escaped
// spelling of "result" takes 38 bytes) is no member it looks for, and an ID
// longer than idKept is not carried.
const (
	keyKept = 64
	idKept  = 4 << 10
)

// The top-level positions of Envelope.
const (
	atKey   uint8 = iota // a member's name, or the end of the object
	atColon              // the ':' after the name
	atValue              // the member's value
	atComma              // ',' or the end of the object
	atEnd                // the object ended, or the message is no object
)

// The members Envelope looks for.
const (
	memberOther uint8 = iota
	memberID
	memberMethod
	memberResult
	memberError
)

// Envelope follows a JSON message part by part, as a transport reads
// it, and finds its top-level "id", "method", "result" and "error" members.
// It holds its position (nesting depth, inside a string or not, after a
// backslash or not, where in the top-level object) and at most one
// top-level name or value of interest, never the message. It does not
// validate: a message that is not JSON gives what it gives, and an ID is
// checked before it is used.
type Envelope struct {
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

// IsResponse reports whether the message, as far as it was fed, is an
// answer: a top-level "result" or "error" and no method (a null one counts
// as none), the rule Parse applies.
func (s *Envelope) IsResponse() bool { return (s.hasResult || s.hasErr) && !s.hasMethod }

// ID is the raw top-level ID found so far, if it is one ValidID accepts and
// no longer than 4 KiB; the last "id" decides, as in a message read whole.
// It is the Envelope's own copy.
func (s *Envelope) ID() []byte { return s.id }

// Fed reports whether any part was fed.
func (s *Envelope) Fed() bool { return s.fed }

// Feed scans the next part of the message. It keeps none of p.
func (s *Envelope) Feed(p []byte) {
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
func (s *Envelope) stringPart(p []byte, i int) int {
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
func (s *Envelope) byteOutside(c byte) {
	if s.depth == 0 {
		switch {
		case c == '{':
			s.depth, s.pos = 1, atKey
		case !IsSpace(c):
			s.pos = atEnd // not an object: there is nothing to find
		}
		return
	}
	if s.inScalar {
		if c != ',' && c != '}' && c != ']' && !IsSpace(c) {
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
		if s.depth == 1 && s.pos == atValue && !IsSpace(c) {
			s.inScalar = true
			s.start(s.member == memberID || s.member == memberMethod)
			s.keep([]byte{c})
		}
	}
}

// start begins a top-level name or value, kept if keep is set.
func (s *Envelope) start(keep bool) {
	s.kept, s.keeping, s.overflow = s.kept[:0], keep, false
}

// keep adds b to what is kept, within its bound.
func (s *Envelope) keep(b []byte) {
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
func (s *Envelope) stringEnded() {
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
func (s *Envelope) valueEnded() {
	if s.pos != atValue {
		return
	}
	complete := s.keeping && !s.overflow
	switch s.member {
	case memberID:
		s.id = nil // the last "id" decides, as in a message read whole
		if complete && ValidID(s.kept) && (s.kept[0] != '"' || isJSONString(s.kept)) {
			s.id = bytes.Clone(s.kept)
		}
	case memberMethod:
		s.hasMethod = !complete || !IsNull(s.kept)
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
		name = Unquote(key)
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

// PeekID reads what it can of the start of a message of which only the
// first bytes were kept: the ID, if a complete one comes before the cut, and
// whether the message is an answer, by the rule Envelope follows. A cut
// inside the value of "result", "error" or "method" counts that member: a
// message is taken for an answer as soon as it shows one, so that no answer
// of the peer's to our call is ever answered.
func PeekID(prefix []byte) (id []byte, isResponse bool) {
	var e Envelope
	e.Feed(prefix)
	if e.depth == 1 && e.pos == atValue && e.member != memberID {
		e.valueEnded() // an ID cut short is none, but a method or an answer's member shows what the message is
	}
	return e.ID(), e.IsResponse()
}
