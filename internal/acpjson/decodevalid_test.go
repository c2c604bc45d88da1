package acpjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shapes of what a program decodes params and results into: besides
// the generated types' kinds, the ones that encoding/json reads in ways of
// its own (json.Number, a tag that names "-", a tag encoding/json does not
// take as a name, an embedded struct, an unnamed struct type that embeds a
// type's UnmarshalJSON, a TextUnmarshaler, a fixed array, an interface).
type (
	generalEmbedded struct {
		E string `json:"e"`
	}
	generalText  struct{ Got string }
	generalValue struct {
		Number json.Number `json:"number,omitempty"`
		//lint:ignore SA5008 the tag that names "-" is what is tested
		Dash     string              `json:"-,"`
		Spaced   string              `json:"a b"`
		Inner    *generalInner       `json:"inner,omitempty"`
		Unnamed  struct{ fuzzUnion } `json:"unnamed"`
		Text     generalText         `json:"textual"`
		Array    [2]int              `json:"array"`
		Iface    json.Marshaler      `json:"iface,omitempty"`
		Raw      json.RawMessage     `json:"raw,omitempty"`
		Nested   fuzzValue           `json:"nested"`
		Deep     **fuzzInner         `json:"deep,omitempty"`
		Names    []fuzzName          `json:"names"`
		Strings  map[string]string
		Untagged int
	}
	// badTag has a tag that encoding/json does not take as a name.
	badTag struct {
		//lint:ignore SA5008 a tag encoding/json does not take is what is tested
		BadTag string `json:"bad'tag"`
	}
	generalInner struct {
		generalEmbedded
		Own string `json:"own"`
	}
)

func (g *generalText) UnmarshalText(b []byte) error {
	if string(b) == "bad" {
		return errors.New("generalText: bad")
	}
	g.Got = string(b)
	return nil
}

var decodeValidSeeds = []string{
	`{"number":"12.5e3","Dash":"d","-":"dash","bad'tag":"b","BadTag":"B","a b":"s"}`,
	`{"number":"not a number"}`, `{"number":12}`, `{"number":true}`,
	`{"inner":{"e":"embedded","own":"o"},"unnamed":{"k":1},"textual":"t","array":[1,2,3]}`,
	`{"textual":"bad"}`, `{"textual":3}`, `{"iface":{}}`, `{"raw":[1, 2]}`,
	`{"nested":{"text":"x","list":[{"s":"a"}]},"deep":{"s":"d"},"names":["a","b"]}`,
	`{"nested":{"text":"a"},"nested":{"flag":true}}`, `{"UNTAGGED":1}`,
	`{"Strings":{"a":"b"},"Untagged":3,"untagged":4}`, `{"strings":{"a":1}}`, `null`, `[]`, `"x"`,
}

// FuzzDecodeValid checks DecodeValid against json.Unmarshal on any valid
// JSON: the same value, or the same error.
func FuzzDecodeValid(f *testing.F) {
	for _, seed := range append(decodeValidSeeds, decodeSeeds...) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		sameAsUnmarshal[generalValue](t, data)
		sameAsUnmarshal[badTag](t, data)
		sameAsUnmarshal[[]generalInner](t, data)
	})
}

// sameAsUnmarshal checks that DecodeValid decodes data into a T as
// json.Unmarshal does.
func sameAsUnmarshal[T any](t *testing.T, data []byte) {
	var want, got T
	wantErr := json.Unmarshal(data, &want)
	err := DecodeValid(data, &got)
	if wantErr != nil {
		require.Error(t, err, "%s", data)
		assert.Equal(t, wantErr.Error(), err.Error(), "%s", data)
		return
	}
	require.NoError(t, err, "%s", data)
	assert.Equal(t, want, got, "%s", data)
}

// TestDecodeValidAsEncodingJSON: each way encoding/json reads a value that
// the one-pass decoder could read otherwise is kept. Where encoding/json's
// reading changed between Go releases (an unnamed type's embedded
// UnmarshalJSON, the text of a json.Number's error, a tag it does not take),
// DecodeValid reads as the running Go's json.Unmarshal does, so the cases
// compare with it instead of with one release's answer.
func TestDecodeValidAsEncodingJSON(t *testing.T) {
	var v generalValue
	require.NoError(t, decodeValid([]byte(`{"-":"dash","Dash":"no"}`), reflect.ValueOf(&v).Elem()),
		"the one-pass decoder reads this type")
	assert.Equal(t, generalValue{Dash: "dash"}, v, `a tag of "-," names "-"`)
	sameAsUnmarshal[generalValue](t, []byte(`{"unnamed":{"k":1}}`))
	sameAsUnmarshal[generalValue](t, []byte(`{"number":"not a number"}`))
	v = generalValue{}
	require.NoError(t, DecodeValid([]byte(`{"nested":{"text":"a"},"nested":{"flag":true},"UNTAGGED":1}`), &v))
	assert.Equal(t, generalValue{Nested: fuzzValue{Text: "a", Flag: true}, Untagged: 1}, v,
		"a member met twice is merged into the first, and a name matches a field without regard to case")
	sameAsUnmarshal[badTag](t, []byte(`{"bad'tag":"b","BadTag":"B"}`))
}

// TestDecodeValidMerges: into a value that is not zero, the value is
// decoded as json.Unmarshal merges, keeping what the data does not set.
func TestDecodeValidMerges(t *testing.T) {
	inner := &generalInner{Own: "kept"}
	v := generalValue{Untagged: 7, Inner: inner}
	require.NoError(t, DecodeValid([]byte(`{"inner":{"e":"set"}}`), &v))
	assert.Same(t, inner, v.Inner, "json.Unmarshal decodes into the pointer it finds")
	assert.Equal(t, generalInner{generalEmbedded: generalEmbedded{E: "set"}, Own: "kept"}, *v.Inner)
	assert.Equal(t, 7, v.Untagged)
}

// TestDecodeValidUnmarshaler: a type's own UnmarshalJSON gets the value's
// bytes without the space around them, and its error comes back as it is.
func TestDecodeValidUnmarshaler(t *testing.T) {
	var u fuzzUnion
	require.NoError(t, DecodeValid([]byte(" {\"a\": 1}\n"), &u))
	assert.Equal(t, `{"a": 1}`, u.Raw)
	assert.EqualError(t, DecodeValid([]byte(`[1]`), &u), "fuzzUnion: no arrays")
	var notPointer *generalValue
	assert.EqualError(t, DecodeValid([]byte(`{}`), notPointer), "json: Unmarshal(nil *acpjson.generalValue)")
}
