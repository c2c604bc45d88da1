package acpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shapes of the generated types, for the one-pass decoder's tests: a
// variant with strings, numbers, booleans, lists, pointers, maps, values of
// any shape and nested unions (a type with its own UnmarshalJSON).
type (
	fuzzName  string
	fuzzInner struct {
		S string `json:"s"`
		N *int64 `json:"n,omitempty"`
	}
	// fuzzUnion keeps the bytes it is given, and refuses arrays, as a
	// nested union refuses what it cannot read.
	fuzzUnion struct{ Raw string }
	fuzzValue struct {
		Text   string         `json:"text"`
		Name   fuzzName       `json:"name,omitempty"`
		Flag   bool           `json:"flag,omitempty"`
		Count  uint32         `json:"count,omitzero"`
		Ratio  float64        `json:"ratio,omitempty"`
		Small  int8           `json:"small,omitempty"`
		Single float32        `json:"single,omitempty"`
		List   []fuzzInner    `json:"list,omitzero"`
		Ptr    *fuzzInner     `json:"ptr,omitempty"`
		Union  fuzzUnion      `json:"union,omitzero"`
		Unions []fuzzUnion    `json:"unions"`
		Any    any            `json:"any,omitempty"`
		Map    map[string]int `json:"map,omitempty"`
		Bytes  []byte         `json:"bytes,omitempty"`
		Skip   string         `json:"-"`
	}
)

func (u *fuzzUnion) UnmarshalJSON(b []byte) error {
	if b[0] == '[' {
		return errors.New("fuzzUnion: no arrays")
	}
	u.Raw = string(b)
	return nil
}

var decodeSeeds = []string{
	`{"text":"hello","name":"n","flag":true,"count":7,"ratio":-1.5e3,"small":-8,"single":0.1}`,
	`{"type":"text","text":"a \"quoted\"\n\ttab \\ \/ \b\f\r \u00e9 \ud83d\ude00 \ud800 \ud800\u0041 \udc00"}`,
	"{\"text\":\"invalid \xff\xfe utf-8 \xed\xa0\x80 and \xe2\x82\"}",
	`{"list":[{"s":"a","n":1},{"s":"b"},{}],"ptr":{"s":"p","n":null},"unions":[{"a":1},null,"x"],"union":{"k":[1]}}`,
	`{"list":[],"unions":[],"any":{"x":[1,"2",null]},"map":{"a":1},"bytes":"aGk="}`,
	`{"text":null,"list":null,"ptr":null,"union":null,"any":null,"map":null,"flag":null,"count":null}`,
	`{"text":"first","text":"second"}`,
	`{"TEXT":"folded","Flag":true}`,
	`{"te\u0078t":"escaped key","unknown":{"deep":[{"text":"no"}]},"-":"dash","Skip":"s","hidden":"h"}`,
	`{"count":-1}`, `{"count":4294967296}`, `{"small":200}`, `{"small":1.0}`, `{"single":1e39}`,
	`{"text":3}`, `{"flag":"yes"}`, `{"unions":[[1]]}`, `{"union":[1]}`, `{"list":{}}`, `{"ptr":[]}`,
	"{\"k\xff\":1,\"text\":\"x\"}", `{"ſ":1}`, `{"teXt":"x","text":"y"}`,
}

// FuzzDecode checks As against json.Unmarshal on any valid JSON: the same
// value, or an error from both; and where the one-pass decoder does not
// decline, that it is right on its own.
func FuzzDecode(f *testing.F) {
	for _, seed := range decodeSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		data = trimSpace(data)
		if !plainNames(data) {
			return // read as JSON.parse reads it, not as encoding/json: TestDecodeReadsNamesAsJSONParse
		}
		var want fuzzValue
		wantErr := json.Unmarshal(data, &want)
		got, err := As[fuzzValue, any](data)
		if wantErr != nil {
			require.Error(t, err, "%s", data)
			assert.Equal(t, wantErr.Error(), err.Error())
			return
		}
		require.NoError(t, err, "%s", data)
		assert.Equal(t, want, got, "%s", data)

		var fast fuzzValue
		if decodeValid(data, reflect.ValueOf(&fast).Elem()) == nil {
			assert.Equal(t, want, fast, "the one-pass decoder on its own: %s", data)
		}
	})
}

// plainNames reports whether every member name in data, at every depth,
// is lower-case ASCII and met once in its object: where encoding/json and
// JSON.parse read the members alike.
func plainNames(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		object bool
		names  map[string]bool
		key    bool // the next token of this object is a name
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		top := (*level)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if name, ok := tok.(string); ok && top != nil && top.object && top.key {
			if top.names[name] || strings.ToLower(name) != name || !isASCII(name) {
				return false
			}
			top.names[name], top.key = true, false
			continue
		}
		if top != nil && top.object {
			top.key = true // a value ends, or a nested one begins and the name follows it
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{object: true, names: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &level{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// trimSpace is what encoding/json gives an UnmarshalJSON: the value
// without the space around it.
func trimSpace(data []byte) []byte {
	var raw json.RawMessage
	_ = json.Unmarshal(data, &raw)
	return raw
}

// TestDecodeDeclines: what the one-pass decoder does not do as
// encoding/json does, it declines, and As's result is encoding/json's.
func TestDecodeDeclines(t *testing.T) {
	for _, in := range []string{
		`{"text":3}`, // a type error
		`{"count":-1}`,
		`{"small":1.0}`,
	} {
		var v fuzzValue
		assert.ErrorIs(t, decodeValid([]byte(in), reflect.ValueOf(&v).Elem()), errDecline, in)
	}
}

// TestDecodeReadsNamesAsJSONParse: member names match exactly, and a
// member met twice is read as its last, whole, as JSON.parse reads them
// (encoding/json takes a name in another case for the field, and merges a
// repeated object into the first).
func TestDecodeReadsNamesAsJSONParse(t *testing.T) {
	for in, want := range map[string]fuzzValue{
		`{"TEXT":"folded"}`:                             {},
		`{"ſ":1,"ſext":"x"}`:                            {},
		`{"TEXT":"folded","text":"x","text":"y"}`:       {Text: "y"},
		`{"text":"x","Text":"folded"}`:                  {Text: "x"},
		`{"ptr":{"s":"a","n":1},"ptr":{"s":"b"}}`:       {Ptr: &fuzzInner{S: "b"}},
		`{"map":{"a":1},"map":{"b":2}}`:                 {Map: map[string]int{"b": 2}},
		`{"list":[{"s":"a","S":"folded"}],"flag":true}`: {List: []fuzzInner{{S: "a"}}, Flag: true},
	} {
		got, err := As[fuzzValue, any]([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		v := fuzzValue{Text: "before"}
		require.NoError(t, Into([]byte(in), &v, nil), in)
		if want.Text == "" {
			want.Text = "before"
		}
		assert.Equal(t, want.Text, v.Text, "into a value already set: %s", in)
	}
}

// TestDecodeOnePass: a variant's members are set in one walk, a nested
// union gets exactly its own bytes, and an empty list is not nil.
func TestDecodeOnePass(t *testing.T) {
	var v fuzzValue
	in := `{"type":"x","text":"a\nb","unions":[],"union": {"k":[1, 2]} ,"ptr":{"s":"p"},"count":3}`
	require.NoError(t, decodeValid([]byte(in), reflect.ValueOf(&v).Elem()))
	assert.Equal(t, fuzzValue{Text: "a\nb", Unions: []fuzzUnion{}, Union: fuzzUnion{Raw: `{"k":[1, 2]}`},
		Ptr: &fuzzInner{S: "p"}, Count: 3}, v)
}

// FuzzUnquote checks unquote against encoding/json on every valid string
// literal, escapes, invalid UTF-8 and lone surrogates included.
func FuzzUnquote(f *testing.F) {
	for _, seed := range []string{
		`plain`, `a \"quoted\" \\ \/ \b\f\n\r\t`, `\u00e9\u0000\uFFFF`, `\ud83d\ude00`, `\ud800`, `\ud800\u0041`,
		`\udc00\ud800`, `\ud800\ud800\udc00`, "\xff\xfe", "\xed\xa0\x80", "caf\xc3", "é\\n\xe2\x82\\t",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, inner []byte) {
		raw := append(append([]byte{'"'}, inner...), '"')
		var want string
		if json.Unmarshal(raw, &want) != nil {
			return
		}
		assert.Equal(t, want, unquote(raw), "%q", raw)
	})
}

// TestIntoChecksMembers: Into notes the required members in its one walk,
// and the fallback to encoding/json (here for a member met twice) checks
// them the same way; a lenient member that does not decode reads as unset.
func TestIntoChecksMembers(t *testing.T) {
	l := &Members{What: "x: fuzzValue", Set: []string{"text"}, Present: []string{"any"}, DefaultOnError: []string{"count"}}
	for in, want := range map[string]string{
		`{"any":null}`:                          `x: fuzzValue without "text", which the schema requires`,
		`{"text":null,"any":1}`:                 `x: fuzzValue: "text" is null, which the schema does not allow`,
		`{"text":"a"}`:                          `x: fuzzValue without "any", which the schema requires`,
		`{"text":"a","text":"b"}`:               `x: fuzzValue without "any", which the schema requires`,
		`{"any":null,"flag":true,"flag":false}`: `x: fuzzValue without "text", which the schema requires`,
	} {
		var v fuzzValue
		assert.EqualError(t, Into([]byte(in), &v, l), want, in)
	}
	var v fuzzValue
	require.NoError(t, Into([]byte(`{"text":"a","any":null,"count":"many"}`), &v, l))
	assert.Equal(t, fuzzValue{Text: "a"}, v, "a count that does not decode reads as unset")
}

// membersOfFuzzValue are checks of every kind on fuzzValue's members.
var membersOfFuzzValue = &Members{What: "fuzz", Set: []string{"text"}, Present: []string{"ptr"}, Lists: []string{"list", "unions"}}

var membersSeeds = []string{
	`{"text":"t","ptr":null,"list":[],"unions":[]}`,
	`{"text":"t","ptr":null,"list":[null]}`,
	`{"text":"t","ptr":null,"unions":[{"a":1},null]}`,
	`{"text":"t","ptr":null,"list":[null],"list":[{"s":"x"}]}`,
	`{"text":"t","ptr":null,"list":[{}],"list":[null]}`,
	`{"text":"t","text":null,"ptr":{}}`,
	`{"text":null,"text":"t","ptr":{}}`,
	`{"ptr":{}}`, `{"text":"t"}`, `{"text":"t","ptr":null,"unions":null}`,
}

// FuzzMembersCheck checks Into's checks against a reading of the object by
// encoding/json, which keeps the last of a member met twice, as JSON.parse
// and the SDK's validators do: a required member missing or null, or a
// list holding null, is refused, and nothing else is.
func FuzzMembersCheck(f *testing.F) {
	for _, seed := range membersSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var members map[string]json.RawMessage
		if !utf8.Valid(data) || json.Unmarshal(data, &members) != nil || members == nil {
			return
		}
		data = trimSpace(data)
		var plain fuzzValue
		if json.Unmarshal(data, &plain) != nil {
			return // a type error: not what the checks are about
		}
		wantErr := membersOfFuzzValue.reference(members)
		var v fuzzValue
		err := Into(data, &v, membersOfFuzzValue)
		if wantErr != "" {
			require.Error(t, err, "%s", data)
			assert.Contains(t, err.Error(), wantErr, "%s", data)
			return
		}
		require.NoError(t, err, "%s", data)
		if plainNames(data) { // else read as JSON.parse reads it: TestDecodeReadsNamesAsJSONParse
			assert.Equal(t, plain, v, "%s", data)
		}
	})
}

// reference is what the checks of l refuse in the object members, read by
// encoding/json, as the start of the error, or "".
func (l *Members) reference(members map[string]json.RawMessage) string {
	for _, k := range l.Set {
		if v, ok := members[k]; !ok || string(v) == "null" {
			return strconv.Quote(k)
		}
	}
	for _, k := range l.Present {
		if _, ok := members[k]; !ok {
			return strconv.Quote(k)
		}
	}
	for _, k := range l.Lists {
		var elems []json.RawMessage
		if json.Unmarshal(members[k], &elems) != nil {
			continue
		}
		for i, e := range elems {
			if string(e) == "null" {
				return fmt.Sprintf("%q[%d] is null", k, i)
			}
		}
	}
	return ""
}

// TestNullElementNamed: a list that holds null is refused with its place.
func TestNullElementNamed(t *testing.T) {
	var v fuzzValue
	err := Into([]byte(`{"text":"t","ptr":null,"list":[{"s":"a"},null]}`), &v, membersOfFuzzValue)
	assert.EqualError(t, err, `fuzz: "list"[1] is null, which the schema does not allow`)
}

// TestPlainASCII: the run ends at the first backslash or byte that is not
// ASCII, wherever it is among the eight bytes looked at together, and
// whatever follows it.
func TestPlainASCII(t *testing.T) {
	for _, special := range []string{`\`, "é", "\xff", "\x80"} {
		for at := range 20 {
			b := []byte(strings.Repeat("a", at) + special + "\x01\\" + strings.Repeat("b", 9))
			assert.Equal(t, at, plainASCII(b), "%q", b)
		}
	}
	assert.Equal(t, 19, plainASCII([]byte(strings.Repeat("\x00[]", 6)+"z")))
}
