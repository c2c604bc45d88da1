package acpjson

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// A union's UnmarshalJSON is given bytes that encoding/json has already
// validated, and json.Unmarshal of its variant would validate them once
// more before decoding them: for a 1 MiB text block, two more passes of
// encoding/json's scanner than a hand-written struct costs. decodeValid
// decodes such bytes in one pass of this package's scanner instead: it
// walks an object's members, sets string fields itself, calls a member's
// own UnmarshalJSON directly (the nested unions), and hands the rest, the
// small values, to json.Unmarshal. It reads member names as JSON.parse,
// the SDK's validators and the wire's own parse read them, where
// encoding/json does not: a name matches a field exactly (encoding/json
// also takes "SESSIONID" for sessionId, so the same bytes named one session
// to the Conn and another to the handler), and a member met twice is read
// as its last, whole (encoding/json merges a repeated object into the
// first). Otherwise it keeps json.Unmarshal's results exactly by declining
// what it does not do the same way: any value it is unsure of, a type
// error. Declining returns errDecline, and As then decodes the whole value
// with json.Unmarshal, as before, without the members whose names match a
// field only without regard to case (exactMembers).

// errDecline says decodeValid leaves the value to json.Unmarshal.
var errDecline = errors.New("acpjson: left to encoding/json")

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

// DecodeValid decodes data, JSON known to be valid (a message the wire
// parse has checked), into v as json.Unmarshal does, with the same value
// and the same error: in one pass (decodeValid) when v points to its type's
// zero value, and with json.Unmarshal otherwise or when the pass declines
// or fails. A type's own UnmarshalJSON is called with its bytes directly,
// without encoding/json scanning them first; when it fails on a member, the
// value is decoded again by json.Unmarshal, which calls it again.
func DecodeValid(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return json.Unmarshal(data, v) // the InvalidUnmarshalError
	}
	data = bytes.TrimSpace(data)
	if u, ok := v.(json.Unmarshaler); ok && len(data) > 0 {
		// What json.Unmarshal does with valid data, and the error it
		// returns as it is.
		return u.UnmarshalJSON(data)
	}
	if e := rv.Elem(); len(data) > 0 && e.IsZero() {
		if decodeAs(data, e, asUnmarshal) == nil {
			return nil
		}
		e.SetZero()
	}
	return json.Unmarshal(data, v)
}

// decodeValid decodes the valid JSON data into rv, which is addressable
// and holds its type's zero value, as json.Unmarshal would, or returns an
// error (errDecline or another) and leaves rv partly set.
func decodeValid(data []byte, rv reflect.Value) error { return decodeAs(data, rv, asSchema) }

// reading is how the one pass reads an object's member names: as the
// schema does (above), or as encoding/json does, declining where the two
// differ (a name that matches a field only without regard to case, a
// member met twice), for DecodeValid.
type reading bool

const (
	asSchema    reading = false
	asUnmarshal reading = true
)

// decodeAs is decodeValid with member names read as how says.
func decodeAs(data []byte, rv reflect.Value, how reading) error {
	t := rv.Type()
	info := infoOf(t)
	if info.unnamedMethods {
		// A struct type without a name has the methods of the fields it
		// embeds, which encoding/json calls on the value as a whole but not
		// on a member of such a type.
		return errDecline
	}
	if info.unmarshaler {
		// encoding/json calls UnmarshalJSON with the value's bytes, null
		// included, for a type that is not a pointer.
		return rv.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data)
	}
	if data[0] == 'n' {
		switch t.Kind() {
		case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
			rv.SetZero()
		}
		return nil
	}
	if info.text {
		return generic(data, rv)
	}
	switch t.Kind() {
	case reflect.String:
		if data[0] != '"' || t == numberType {
			return errDecline
		}
		rv.SetString(unquote(data))
		return nil
	case reflect.Struct:
		if data[0] != '{' {
			return errDecline
		}
		if info.fields == nil {
			return generic(data, rv)
		}
		_, err := decodeStructWith(data, rv, info.fields, nil, how)
		return err
	case reflect.Slice:
		if data[0] != '[' || t.Elem().Kind() == reflect.Uint8 {
			return generic(data, rv)
		}
		return decodeSlice(data, rv, how)
	case reflect.Pointer:
		rv.Set(reflect.New(t.Elem()))
		return decodeAs(data, rv.Elem(), how)
	case reflect.Bool:
		if data[0] != 't' && data[0] != 'f' {
			return errDecline
		}
		rv.SetBool(data[0] == 't')
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil || rv.OverflowInt(n) {
			return errDecline
		}
		rv.SetInt(n)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(string(data), 10, 64)
		if err != nil || rv.OverflowUint(n) {
			return errDecline
		}
		rv.SetUint(n)
		return nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(string(data), t.Bits())
		if err != nil || rv.OverflowFloat(f) {
			return errDecline
		}
		rv.SetFloat(f)
		return nil
	}
	return generic(data, rv)
}

// generic decodes data into rv with json.Unmarshal: values this package
// gains nothing by decoding itself.
func generic(data []byte, rv reflect.Value) error {
	return json.Unmarshal(data, rv.Addr().Interface())
}

// decodeStructWith is decodeStruct with the members l names read as the
// schema reads them, and notes, in the same walk, which of l's required
// members it found (see Members.found).
func decodeStructWith(data []byte, rv reflect.Value, info *structFields, l *Members, how reading) ([]bool, error) {
	if info == nil {
		return nil, errDecline
	}
	var seen []bool
	var err error
	found := l.newFound()
	walkErr := eachMember(data, func(raw, _, value []byte) bool {
		// The name as a string of its own only where it is needed: a
		// field's is the field's.
		i, ok := info.byName[string(raw)]
		var name string
		switch {
		case ok:
			name = info.names[i]
		case l != nil:
			name = string(raw)
		}
		l.note(found, name, value)
		if !ok {
			if how == asUnmarshal && info.folded(string(raw)) {
				err = errDecline // encoding/json would take it for a field
				return false
			}
			return true // a member the type does not know, whatever its case
		}
		if seen == nil {
			seen = make([]bool, len(info.index))
		}
		fv := rv.Field(info.index[i])
		if seen[i] && how == asUnmarshal {
			err = errDecline // encoding/json decodes it into what the first one set
			return false
		}
		if seen[i] {
			fv.SetZero() // the last one wins whole, as in JSON.parse: nothing of the first is merged in
		}
		seen[i] = true
		if skip, ok := l.of(name); ok {
			decodeLenient(value, fv, skip, l.noNulls(name))
			return true
		}
		err = decodeAs(value, fv, how)
		return err == nil
	})
	if walkErr != nil {
		return nil, walkErr
	}
	return found, err
}

// decodeSlice decodes the array data into the slice rv, which is nil, as
// encoding/json does into a nil slice: an empty array is an empty, non-nil
// slice. The elements are decoded in place, the slice grown as they come.
func decodeSlice(data []byte, rv reflect.Value, how reading) error {
	s := scanner{data: data}
	s.byte('[')
	for n := 0; ; n++ {
		s.space()
		if s.byte(']') {
			if n == 0 {
				rv.Set(reflect.MakeSlice(rv.Type(), 0, 0))
			}
			return nil
		}
		start := s.i
		if err := s.skipValue(); err != nil {
			return err
		}
		if n == rv.Cap() {
			rv.Grow(1)
		}
		rv.SetLen(n + 1)
		if err := decodeAs(data[start:s.i], rv.Index(n), how); err != nil {
			return err
		}
		s.space()
		s.byte(',')
	}
}

// structFields is how decodeStruct finds a struct's fields by their JSON
// names.
type structFields struct {
	byName map[string]int // JSON name to position in index
	index  []int          // the fields' indexes in the struct
	names  []string       // the fields' JSON names, by position in index
}

// folded reports whether key matches no field exactly but would match
// one to encoding/json, which also takes a key that differs from a field's
// name only in case (Unicode's simple folding: "ſessionId" is sessionId).
func (f *structFields) folded(key string) bool {
	if _, exact := f.byName[key]; exact {
		return false
	}
	for name := range f.byName {
		if strings.EqualFold(name, key) {
			return true
		}
	}
	return false
}

// exactMembers returns the object data without the members whose names
// match a field of t only without regard to case, for json.Unmarshal,
// which would take them for the field: JSON.parse and the SDK's
// validators match names exactly, and so does the wire's own parse.
func exactMembers(data []byte, t reflect.Type) []byte {
	info := fieldsOf(t)
	if info == nil {
		return data
	}
	var kept [][]byte
	dropped := false
	err := eachMember(data, func(name, member, _ []byte) bool {
		if info.folded(string(name)) {
			dropped = true
		} else {
			kept = append(kept, member)
		}
		return true
	})
	if err != nil || !dropped {
		return data
	}
	out := append([]byte{'{'}, bytes.Join(kept, []byte{','})...)
	return append(out, '}')
}

// typeInfo is what the one pass asks of a type before decoding a value of
// it, found once: the reflection costs more than decoding a small value.
type typeInfo struct {
	unnamedMethods bool          // a type without a name whose pointer has methods (see decodeAs)
	unmarshaler    bool          // not a pointer, and its pointer is a json.Unmarshaler
	text           bool          // its pointer is an encoding.TextUnmarshaler
	fields         *structFields // a struct's fields (fieldsOf)
}

var infoCache sync.Map // reflect.Type to *typeInfo

// infoOf returns t's typeInfo.
func infoOf(t reflect.Type) *typeInfo {
	if i, ok := infoCache.Load(t); ok {
		return i.(*typeInfo)
	}
	p := reflect.PointerTo(t)
	notPointer := t.Kind() != reflect.Pointer
	i := &typeInfo{
		unnamedMethods: notPointer && t.Name() == "" && p.NumMethod() > 0,
		unmarshaler:    notPointer && p.Implements(unmarshalerType),
		text:           p.Implements(textUnmarshalerType),
	}
	if t.Kind() == reflect.Struct {
		i.fields = fieldsOf(t)
	}
	infoCache.Store(t, i)
	return i
}

var fieldCache sync.Map // reflect.Type to *structFields, nil when declined

// fieldsOf returns t's fields by JSON name, or nil for a struct whose tags
// ask for more than a name, omitempty and omitzero (embedded structs, the
// string option), which json.Unmarshal decodes instead.
func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{byName: map[string]int{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			f = nil
			break
		}
		if !sf.IsExported() {
			continue
		}
		name, opts, comma := cutComma(sf.Tag.Get("json"))
		if name == "-" && !comma {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if !knownOptions(opts) || !asciiName(name) {
			f = nil
			break
		}
		if _, dup := f.byName[name]; dup {
			f = nil
			break
		}
		f.byName[name] = len(f.index)
		f.index = append(f.index, i)
		f.names = append(f.names, name)
	}
	fieldCache.Store(t, f)
	return f
}

func cutComma(tag string) (string, string, bool) {
	if i := bytes.IndexByte([]byte(tag), ','); i >= 0 {
		return tag[:i], tag[i+1:], true
	}
	return tag, "", false
}

// knownOptions reports whether a tag's options change nothing in decoding.
func knownOptions(opts string) bool {
	for opts != "" {
		opt, rest, _ := cutComma(opts)
		if opt != "omitempty" && opt != "omitzero" {
			return false
		}
		opts = rest
	}
	return true
}

// asciiName reports whether name is ASCII and a name encoding/json takes
// from a tag as it is (it takes the field's own name for any other tag).
func asciiName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		letterOrDigit := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !letterOrDigit && !strings.ContainsRune(tagPunctuation, rune(c)) {
			return false
		}
	}
	return true
}

// tagPunctuation is what encoding/json accepts in a tag's name besides
// letters and digits.
const tagPunctuation = "!#$%&()*+-./:;<=>?@[]^_{|}~ "

// unquote returns the string that the valid JSON string literal raw holds,
// as encoding/json reads it: escapes decoded, and each byte that is not
// part of valid UTF-8, and each \u escape of a lone surrogate, read as
// U+FFFD.
func unquote(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	// One walk, copying runs of plain bytes: a search per escape would
	// cost more than it saves on text with an escape every line.
	out := make([]byte, 0, len(inner))
	start := 0
	for i := 0; i < len(inner); {
		if i += plainASCII(inner[i:]); i == len(inner) {
			break
		}
		if inner[i] == '\\' {
			out = append(out, inner[start:i]...)
			var n int
			out, n = appendEscape(out, inner[i:])
			i += n
			start = i
			continue
		}
		r, size := utf8.DecodeRune(inner[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, inner[start:i]...)
			out = utf8.AppendRune(out, utf8.RuneError)
			start = i + 1
		}
		i += size
	}
	return string(append(out, inner[start:]...))
}

// plainASCII is the length of b's leading run of ASCII bytes other than
// the backslash, which a string holds as they are. It looks at eight bytes
// at a time: a byte's high bit is set when it is not ASCII, and the classic
// test for a zero byte, (v - 0x01…) & ^v & 0x80…, finds a backslash in v =
// x ^ 0x5c5c…; the lowest bit set is the first such byte (a false one can
// only follow a true one).
func plainASCII(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		bs := x ^ (ones * '\\')
		if m := (x | (bs-ones)&^bs) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b) && b[i] < utf8.RuneSelf && b[i] != '\\'; i++ {
	}
	return i
}

// appendEscape appends what the escape at the start of esc stands for and
// returns how many bytes it took: two, six for a \u escape, or twelve for a
// surrogate pair.
func appendEscape(out, esc []byte) ([]byte, int) {
	switch c := esc[1]; c {
	case 'b':
		return append(out, '\b'), 2
	case 'f':
		return append(out, '\f'), 2
	case 'n':
		return append(out, '\n'), 2
	case 'r':
		return append(out, '\r'), 2
	case 't':
		return append(out, '\t'), 2
	case 'u':
		r := hex4(esc[2:6])
		if !utf16.IsSurrogate(r) {
			return utf8.AppendRune(out, r), 6
		}
		if len(esc) >= 12 && esc[6] == '\\' && esc[7] == 'u' {
			if pair := utf16.DecodeRune(r, hex4(esc[8:12])); pair != utf8.RuneError {
				return utf8.AppendRune(out, pair), 12
			}
		}
		return utf8.AppendRune(out, utf8.RuneError), 6
	default: // '"', '\\', '/'
		return append(out, c), 2
	}
}

// hex4 reads four hexadecimal digits, which valid JSON guarantees.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// Members is what the schema says of a struct's members beyond their
// types: the required ones, present and not null (Set) or present (Present,
// null being one of their values), the lists whose elements may not be
// null (Lists), and those it reads leniently, as the SDK's validators do: a
// value of DefaultOnError that does not decode reads as unset
// (x-deserialize-default-on-error), and the elements of a list of
// SkipInvalid that do not decode, null among them for a list of Lists, are
// left out (x-deserialize-skip-invalid-items); a lenient list with a null
// element where none may be reads as unset. A member met twice is read
// as its last. What names the struct in errors.
type Members struct {
	What                        string
	Set, Present                []string
	Lists                       []string
	DefaultOnError, SkipInvalid []string
}

// newFound is the record of a walk: which required members it found, and
// which lists hold a null element, each as the member's last occurrence
// has it.
func (l *Members) newFound() []bool {
	if l == nil || len(l.Set)+len(l.Present)+len(l.Lists) == 0 {
		return nil
	}
	return make([]bool, len(l.Set)+len(l.Present)+len(l.Lists))
}

// note records the member name, of the given value, in found.
func (l *Members) note(found []bool, name string, value []byte) {
	if found == nil {
		return
	}
	for i, k := range l.Set {
		if k == name {
			found[i] = value[0] != 'n'
		}
	}
	for i, k := range l.Present {
		if k == name {
			found[len(l.Set)+i] = true
		}
	}
	for i, k := range l.Lists {
		if _, lenient := l.of(name); k == name && !lenient {
			found[len(l.Set)+len(l.Present)+i] = nullElement(value) >= 0
		}
	}
}

// missing is the error for the first required member found does not
// hold, or the first list that holds a null element, or nil.
func (l *Members) missing(data []byte, found []bool) error {
	if found == nil {
		return nil
	}
	for i, k := range l.Set {
		if found[i] {
			continue
		}
		if raw, _ := Member(data, k); raw != nil {
			return fmt.Errorf("%s: %q is null, which the schema does not allow", l.What, k)
		}
		return fmt.Errorf("%s without %q, which the schema requires", l.What, k)
	}
	for i, k := range l.Present {
		if !found[len(l.Set)+i] {
			return fmt.Errorf("%s without %q, which the schema requires", l.What, k)
		}
	}
	for i, k := range l.Lists {
		if found[len(l.Set)+len(l.Present)+i] {
			raw, _ := Member(data, k)
			return fmt.Errorf("%s: %q[%d] is null, which the schema does not allow", l.What, k, nullElement(raw))
		}
	}
	return nil
}

// noNulls reports whether the elements of the list member name may not be
// null.
func (l *Members) noNulls(name string) bool {
	return l != nil && slices.Contains(l.Lists, name)
}

// of reports whether the member name is read leniently, and whether its
// invalid elements are skipped.
func (l *Members) of(name string) (skip, ok bool) {
	if l == nil {
		return false, false
	}
	for _, k := range l.SkipInvalid {
		if k == name {
			return true, true
		}
	}
	for _, k := range l.DefaultOnError {
		if k == name {
			return false, true
		}
	}
	return false, false
}

// decodeLenient decodes a lenient member into fv, leaving out what does
// not decode, and, with noNulls, the null elements of a list.
func decodeLenient(value []byte, fv reflect.Value, skip, noNulls bool) {
	if !skip || value[0] != '[' || fv.Kind() != reflect.Slice {
		if (noNulls && nullElement(value) >= 0) || decodeMember(value, fv) != nil {
			fv.SetZero()
		}
		return
	}
	out := reflect.MakeSlice(fv.Type(), 0, 0)
	s := scanner{data: value}
	s.byte('[')
	for {
		s.space()
		if s.byte(']') || s.i >= len(value) {
			break
		}
		start := s.i
		if s.skipValue() != nil {
			break
		}
		e := reflect.New(fv.Type().Elem()).Elem()
		if noNulls && value[start] == 'n' {
			// left out, as an invalid element
		} else if decodeMember(value[start:s.i], e) == nil {
			out = reflect.Append(out, e)
		}
		s.space()
		s.byte(',')
	}
	fv.Set(out)
}

// decodeMember decodes one value into the zero fv, in one pass or else
// with json.Unmarshal.
func decodeMember(value []byte, fv reflect.Value) error {
	if decodeValid(value, fv) == nil {
		return nil
	}
	fv.SetZero()
	return json.Unmarshal(value, fv.Addr().Interface())
}

// Into decodes data, JSON that encoding/json has validated, into v, a
// pointer to a struct, as json.Unmarshal does, and checks and reads its
// members as l says (l may be nil): in one pass (decodeValid), the
// required members noted on the way, when v holds its zero value, and
// with json.Unmarshal, which merges into what v holds, otherwise or when
// the pass declines or fails, without the top-level members whose names
// match a field only without regard to case. That json.Unmarshal is not
// lenient: a struct decoded into again fails on a malformed lenient member,
// and its nested structs of no UnmarshalJSON of their own take names in
// another case and merge a repeated member, as encoding/json does.
func Into(data []byte, v any, l *Members) error {
	rv := reflect.ValueOf(v).Elem()
	if rv.IsZero() {
		found, err := decodeStructWith(data, rv, fieldsOf(rv.Type()), l, asSchema)
		if err == nil {
			return l.missing(data, found)
		}
		rv.SetZero()
	}
	if err := l.check(data); err != nil {
		return err
	}
	return json.Unmarshal(exactMembers(data, rv.Type()), v)
}

// check checks, in one walk over the object data's top-level members, what
// l requires of them; l may be nil.
func (l *Members) check(data []byte) error {
	found := l.newFound()
	if found == nil {
		return nil
	}
	err := eachMember(data, func(name, _, value []byte) bool {
		l.note(found, string(name), value)
		return true
	})
	if err != nil {
		return err
	}
	return l.missing(data, found)
}

// Require checks, in one walk over the object data's top-level members,
// that each of set is present and not null, and each of present is
// present; what names the value in the error.
func Require(data []byte, what string, set, present []string) error {
	return (&Members{What: what, Set: set, Present: present}).check(data)
}
