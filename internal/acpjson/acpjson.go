// Package acpjson holds the JSON helpers the generated ACP type packages
// (acpv1, acpv2) share: splicing a union's discriminator into a variant's
// object, finding a top-level member without decoding the object, and
// merging the members of two objects.
//
// Every function takes JSON that encoding/json has already validated (the
// bytes an UnmarshalJSON method is given, or those json.Marshal returned),
// so the scanner only has to find the ends of values, not to check them,
// and it stops at the member it looks for: internal/wire's Member, which
// validates the whole object, would scan a 1 MiB text block once more to
// find the "type" before it.
package acpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/acpkit/acprpc/internal/wire"
)

// Tagged marshals v, which must encode as a JSON object, with the member
// tag (`"type":"text"`, already encoded) first: the shape of a union's
// variant on the wire.
func Tagged(tag string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Splice(tag, body)
}

// Splice returns object with the encoded member tag inserted first. An
// empty tag returns object as it is.
func Splice(tag string, object []byte) ([]byte, error) {
	if tag == "" {
		return object, nil
	}
	object = bytes.TrimSpace(object)
	if len(object) < 2 || object[0] != '{' {
		return nil, fmt.Errorf("acpjson: a union variant must encode as a JSON object, not %.20q", object)
	}
	rest := bytes.TrimSpace(object[1:])
	out := make([]byte, 0, len(tag)+len(object)+2)
	out = append(out, '{')
	out = append(out, tag...)
	if rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}

// Merge returns the members of the objects a and b as one object: the
// common members of an object with the members of the variant it holds. A
// member of b that a has too is left out: a variant kept whole as received
// holds the object's common members as well.
func Merge(a, b []byte) ([]byte, error) {
	a = bytes.TrimSpace(a)
	if len(a) < 2 || a[0] != '{' {
		return nil, errors.New("acpjson: only JSON objects merge")
	}
	out := append([]byte(nil), a[:len(a)-1]...)
	out = bytes.TrimRight(out, " \t\r\n")
	empty := len(out) == 1
	err := members(b, func(key string, member []byte) {
		if m, _ := Member(a, key); m != nil {
			return
		}
		if !empty {
			out = append(out, ',')
		}
		out, empty = append(out, member...), false
	})
	if err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// Unknown encodes a variant this package does not know: raw as received
// when it is set, else an object with only its discriminator.
func Unknown(key, value string, raw json.RawMessage) ([]byte, error) {
	if raw != nil {
		return raw, nil
	}
	k, _ := json.Marshal(key)
	v, _ := json.Marshal(value)
	return []byte("{" + string(k) + ":" + string(v) + "}"), nil
}

// Tag returns the string value of the top-level member key of the object
// data, and whether it is present as a string. A member that is present but
// null or not a string reads as absent.
func Tag(data []byte, key string) (string, bool, error) {
	raw, err := Member(data, key)
	if err != nil || raw == nil || raw[0] != '"' {
		return "", false, err
	}
	return wire.Unquote(raw), true, nil
}

// IsNull reports whether data is the JSON null, the value the schema
// makes the same as an omitted member.
func IsNull(data []byte) bool { return string(bytes.TrimSpace(data)) == "null" }

// Has reports whether the object data has every one of the top-level
// members keys.
func Has(data []byte, keys ...string) bool {
	for _, k := range keys {
		if raw, err := Member(data, k); err != nil || raw == nil {
			return false
		}
	}
	return true
}

// Decode decodes data into a new T.
func Decode[T any](data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// As decodes data, which encoding/json has validated, as a T, one of a
// union's variants, and returns it as the union's interface I. It decodes
// in one pass where it can (see decodeValid), and otherwise, or on any
// error, with json.Unmarshal, whose result is the same.
func As[T, I any](data []byte) (I, error) {
	var v T
	if decodeValid(data, reflect.ValueOf(&v).Elem()) != nil {
		v = *new(T)
		if err := json.Unmarshal(data, &v); err != nil {
			var none I
			return none, err
		}
	}
	return any(v).(I), nil
}

// AsInteger reads the JSON number data, an integer that an int64 holds
// however it is spelled, as a T, a scalar union's integer variant, and
// returns it as the union's interface I.
func AsInteger[T ~int64, I any](data []byte) (I, error) {
	n, err := Integer(data)
	if err != nil {
		var none I
		return none, err
	}
	return any(T(n)).(I), nil
}

// Clone returns a copy of data, for a RawMessage that outlives the buffer
// it was decoded from.
func Clone(data []byte) json.RawMessage {
	return append(json.RawMessage(nil), bytes.TrimSpace(data)...)
}

// FirstElement returns the first element of the JSON array data, or nil
// for an empty array.
func FirstElement(data []byte) ([]byte, error) {
	s := scanner{data: data}
	s.space()
	if !s.byte('[') {
		return nil, errors.New("acpjson: not a JSON array")
	}
	s.space()
	if s.peek() == ']' {
		return nil, nil
	}
	start := s.i
	if err := s.skipValue(); err != nil {
		return nil, err
	}
	return data[start:s.i], nil
}

// Member returns the raw value of the top-level member key of the object
// data, or nil when there is none. A member met more than once is read as
// JSON.parse, encoding/json and the wire parse read it: the last one wins.
func Member(data []byte, key string) ([]byte, error) {
	var found []byte
	err := eachMember(data, func(name, _, value []byte) bool {
		if string(name) == key {
			found = value
		}
		return true
	})
	return found, err
}

// nullElement returns the index of the first null element of the JSON
// array data, or -1 when it has none or is not an array.
func nullElement(data []byte) int {
	s := scanner{data: data}
	if !s.byte('[') {
		return -1
	}
	for i := 0; ; i++ {
		s.space()
		switch s.peek() {
		case ']', 0:
			return -1
		case 'n':
			return i
		}
		if s.skipValue() != nil {
			return -1
		}
		s.space()
		s.byte(',')
	}
}

// members calls f with each member of the object data, as its key and its
// encoded text ("key":value).
func members(data []byte, f func(key string, member []byte)) error {
	return eachMember(data, func(name, member, _ []byte) bool {
		f(string(name), member)
		return true
	})
}

// eachMember walks the members of the object data, giving f each one's
// name (unescaped; the object's own bytes when it holds no escape), its
// whole text and its value, until f returns false.
func eachMember(data []byte, f func(name, member, value []byte) bool) error {
	s := scanner{data: data}
	s.space()
	if !s.byte('{') {
		return errors.New("acpjson: not a JSON object")
	}
	for {
		s.space()
		if s.byte('}') {
			return nil
		}
		start := s.i
		name, err := s.key()
		if err != nil {
			return err
		}
		s.space()
		if !s.byte(':') {
			return errors.New("acpjson: malformed object")
		}
		s.space()
		valueStart := s.i
		if err := s.skipValue(); err != nil {
			return err
		}
		if !f(name, data[start:s.i], data[valueStart:s.i]) {
			return nil
		}
		s.space()
		s.byte(',')
	}
}

// scanner walks JSON that is known to be valid.
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.data) {
		return s.data[s.i]
	}
	return 0
}

func (s *scanner) byte(b byte) bool {
	if s.peek() == b {
		s.i++
		return true
	}
	return false
}

// key reads a member name, unescaped only when it holds an escape: the
// bytes of the object itself, without a copy, when it holds none.
func (s *scanner) key() ([]byte, error) {
	start := s.i
	escaped, err := s.skipString()
	if err != nil {
		return nil, err
	}
	raw := s.data[start:s.i]
	if !escaped {
		return raw[1 : len(raw)-1], nil
	}
	var name string
	err = json.Unmarshal(raw, &name)
	return []byte(name), err
}

// skipString moves past the string at s.i and reports whether it held an
// escape. It looks for quotes alone, a fast byte search, and tells the
// closing one by the even number of backslashes before it.
func (s *scanner) skipString() (bool, error) {
	start := s.i + 1
	if err := s.passString(); err != nil {
		return false, err
	}
	return bytes.IndexByte(s.data[start:s.i-1], '\\') >= 0, nil
}

// passString moves past the string at s.i, as skipString does, without
// telling whether it held an escape: a value skipped is not read, and a
// second search of a long text would cost as much as the first.
func (s *scanner) passString() error {
	if !s.byte('"') {
		return errors.New("acpjson: expected a string")
	}
	start := s.i
	for {
		j := bytes.IndexByte(s.data[s.i:], '"')
		if j < 0 {
			return errors.New("acpjson: unterminated string")
		}
		end := s.i + j
		s.i = end + 1
		k := end
		for k > start && s.data[k-1] == '\\' {
			k--
		}
		if (end-k)%2 == 0 {
			return nil
		}
	}
}

// skipValue moves past the value at s.i.
func (s *scanner) skipValue() error {
	switch s.peek() {
	case '"':
		return s.passString()
	case '{', '[':
		return s.skipNested()
	}
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		s.i++
	}
	return nil
}

// skipNested moves past the object or array at s.i, strings and all.
func (s *scanner) skipNested() error {
	depth := 0
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '"':
			if err := s.passString(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return nil
			}
		}
		s.i++
	}
	return errors.New("acpjson: unterminated object or array")
}

// Kind is the JSON type of a value, as a scalar union tells its variants
// apart.
type Kind uint8

// The kinds of JSON value. An integer is a number whose value is an
// integer that an int64 holds, however it is spelled (2, 2.0, 2e0), as
// the schema's "integer" is.
const (
	KindNull Kind = iota
	KindBoolean
	KindString
	KindInteger
	KindNumber
	KindArray
	KindObject
)

// KindOf returns the kind of the valid JSON value data.
func KindOf(data []byte) Kind {
	data = bytes.TrimSpace(data)
	switch data[0] {
	case 'n':
		return KindNull
	case 't', 'f':
		return KindBoolean
	case '"':
		return KindString
	case '[':
		return KindArray
	case '{':
		return KindObject
	}
	if _, err := Integer(data); err == nil {
		return KindInteger
	}
	return KindNumber
}

// Integer returns the value of the JSON number data, which must be an
// integer that an int64 holds. It is read exactly, as the wire reads an
// ID (no float64 rounds 9007199254740993.0, or takes
// 9223372036854775807.0 beyond 64 bits).
func Integer(data []byte) (int64, error) {
	data = bytes.TrimSpace(data)
	n, ok := wire.Integer(data)
	if !ok {
		return 0, fmt.Errorf("acpjson: %.40s is not an integer of 64 bits", data)
	}
	return n, nil
}
