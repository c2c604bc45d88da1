package acpjson

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpliceAndMerge(t *testing.T) {
	b, err := Splice(`"type":"text"`, []byte(`{"text":"hi"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"type":"text","text":"hi"}`, string(b))
	b, err = Splice(`"type":"x"`, []byte(` { } `))
	require.NoError(t, err)
	assert.Equal(t, `{"type":"x"}`, string(b))
	_, err = Splice(`"type":"x"`, []byte(`[1]`))
	assert.Error(t, err, "a variant that is not an object cannot carry a tag")

	b, err = Merge([]byte(`{"id":"a","name":"n"}`), []byte(`{"type":"select","id":"a","options":[]}`))
	require.NoError(t, err)
	assert.Equal(t, `{"id":"a","name":"n","type":"select","options":[]}`, string(b), "a member both have is written once")
	b, err = Merge([]byte(`{}`), []byte(`{"a":1}`))
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, string(b))
}

func TestTag(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`{"type":"text","text":"x"}`, "text", true},
		{`{"text":"{\"type\":\"no\"}","nested":{"type":"no"},"type":"yes"}`, "yes", true},
		{`{"ty\u0070e":"escaped key"}`, "escaped key", true},
		{`{"type":"caf\u00e9"}`, "café", true},
		{`{"type":null}`, "", false},
		{`{"type":3}`, "", false},
		{`{}`, "", false},
	} {
		got, ok, err := Tag([]byte(c.in), "type")
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
		assert.Equal(t, c.ok, ok, c.in)
	}
	_, _, err := Tag([]byte(`"text"`), "type")
	assert.Error(t, err, "a union's value must be an object")
}

func TestFirstElement(t *testing.T) {
	first, err := FirstElement([]byte(` [ {"a":[1,2]} , 2]`))
	require.NoError(t, err)
	assert.Equal(t, `{"a":[1,2]}`, string(first))
	first, err = FirstElement([]byte(`[]`))
	require.NoError(t, err)
	assert.Nil(t, first)
}

// FuzzMember checks the scanner against encoding/json: on any valid
// object, every top-level member it finds is the one encoding/json finds,
// the last of a member met twice.
func FuzzMember(f *testing.F) {
	for _, seed := range []string{
		`{"type":"text","text":"a \"quoted\" } ] { [ string"}`,
		`{"a":{"b":[{"c":"}"}]},"b":-1.5e3,"c":true,"d":null,"e\u0041":"x"}`,
		`{ "x" : [ ] , "y" : { } }`,
		`{"\\":"\\\\","k":"v"}`,
		`{"type":"text","text":"t","type":"image"}`,
		`{"sessionId":"s","sessionId":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]json.RawMessage
		// encoding/json reads a key of invalid UTF-8 as U+FFFD, and the
		// scanner compares keys byte for byte: the keys it looks for, the
		// discriminators of the schema, are ASCII.
		if !utf8.Valid(data) || json.Unmarshal(data, &want) != nil || want == nil {
			return
		}
		for key, value := range want {
			got, err := Member(data, key)
			require.NoError(t, err)
			var a, b any
			require.NoError(t, json.Unmarshal(value, &a))
			require.NoError(t, json.Unmarshal(got, &b), "member %q: %q", key, got)
			assert.Equal(t, a, b, "member %q", key)
		}
	})
}

// A repeated member is read as its last occurrence, as JSON.parse and
// encoding/json read it: a union's discriminator and the required check.
func TestRepeatedMemberLastWins(t *testing.T) {
	tag, ok, err := Tag([]byte(`{"type":"text","text":"t","type":"image"}`), "type")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "image", tag)
	err = Require([]byte(`{"sessionId":"s","sessionId":null}`), "x", []string{"sessionId"}, nil)
	assert.EqualError(t, err, `x: "sessionId" is null, which the schema does not allow`)
	assert.NoError(t, Require([]byte(`{"sessionId":null,"sessionId":"s"}`), "x", []string{"sessionId"}, nil))
}

// TestKindOf: a scalar union's variant is chosen by the value's JSON type,
// an integer being any number whose value is one that an int64 holds.
func TestKindOf(t *testing.T) {
	for in, want := range map[string]Kind{
		`null`: KindNull, `true`: KindBoolean, `false`: KindBoolean, `"7"`: KindString, `[]`: KindArray, `{}`: KindObject,
		`7`: KindInteger, `-7`: KindInteger, `2.0`: KindInteger, `3e2`: KindInteger, `-9223372036854775808`: KindInteger,
		`1.5`: KindNumber, `9223372036854775808`: KindNumber, `1e19`: KindNumber, `1e-3`: KindNumber,
	} {
		assert.Equal(t, want, KindOf([]byte(in)), in)
	}
	n, err := Integer([]byte(`-3e2`))
	require.NoError(t, err)
	assert.Equal(t, int64(-300), n)
	_, err = Integer([]byte(`0.5`))
	assert.Error(t, err)
}
