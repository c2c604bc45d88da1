package wire

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// maxDepth bounds nesting so that a hostile message cannot exhaust the stack;
// encoding/json uses the same bound.
const maxDepth = 10000

var (
	errSyntax  = errors.New("invalid JSON")
	errTooDeep = errors.New("JSON nested too deeply")
)

// scanner validates JSON text in place: it moves i past one value at a time
// and records the spans of the members it is asked for.
type scanner struct {
	b      []byte
	i      int
	spaced bool // white space was skipped between tokens
}

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// first is the first byte of b that is not white space, or 0.
func (s *scanner) first() byte {
	for _, c := range s.b {
		if !IsSpace(c) {
			return c
		}
	}
	return 0
}

func (s *scanner) ws() {
	for s.i < len(s.b) && IsSpace(s.b[s.i]) {
		s.i++
		s.spaced = true
	}
}

func (s *scanner) atEnd() bool {
	s.ws()
	return s.i == len(s.b)
}

// capture records the span of one named member of an object; name is the
// member's name, unquoted.
type capture struct {
	name string
	span []byte
}

// object scans an object at s.i. With top set it records the envelope's
// members; with c set it records the member c names.
func (s *scanner) object(depth int, top *members, c *capture) error {
	empty, err := s.open(depth, '}')
	if empty || err != nil {
		return err
	}
	for more := true; more; {
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
		case c != nil && keyIs(key, c.name):
			into = &c.span
		}
		if err := s.value(depth+1, inner); err != nil {
			return err
		}
		if into != nil {
			*into = s.b[valStart:s.i]
		}
		if more, err = s.next('}'); err != nil {
			return err
		}
	}
	return nil
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
	empty, err := s.open(depth, ']')
	if empty || err != nil {
		return err
	}
	for more := true; more; {
		s.ws()
		if err := s.value(depth+1, nil); err != nil {
			return err
		}
		if more, err = s.next(']'); err != nil {
			return err
		}
	}
	return nil
}

// open enters the object or array at s.i, whose closing byte is end: it
// checks the nesting bound, steps past the opening byte and reports whether
// end follows at once. Objects and arrays share it, and next.
func (s *scanner) open(depth int, end byte) (empty bool, err error) {
	if depth >= maxDepth {
		return false, errTooDeep
	}
	s.i++ // '{' or '['
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == end {
		s.i++
		return true, nil
	}
	return false, nil
}

// next steps past what follows a member or an element: a comma, when more
// come, or end.
func (s *scanner) next(end byte) (more bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return false, errSyntax
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return true, nil
	case end:
		s.i++
		return false, nil
	}
	return false, errSyntax
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
	for ; i+8 <= len(b); i += 8 {
		if m := specials(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
			break
		}
	}
	return i
}

// specials marks, with its high bit, each of x's eight bytes that is a
// quote, a backslash or a control character, with the classic test for a
// zero byte: (v - 0x01…) & ^v & 0x80… is set for some byte exactly when
// some byte of v is zero (or below n, with n × 0x01… in place of 0x01…). A
// byte can be marked falsely only after one marked truly, by the borrow, so
// the lowest mark is the first special byte.
func specials(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	below := (x - ones*0x20) & ^x
	return (below | (quote-ones)&^quote | (backslash-ones)&^backslash) & highs
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

// isJSONString reports whether b is exactly one valid JSON string.
func isJSONString(b []byte) bool {
	s := scanner{b: b}
	return s.str() == nil && s.i == len(b)
}
