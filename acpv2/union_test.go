package acpv2

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnknownVariantKeptWhole: v2's unions accept tags they do not list,
// and the Unknown variant sends back exactly what it received, nested or
// not.
func TestUnknownVariantKeptWhole(t *testing.T) {
	in := `{"sessionId":"s","update":{"sessionUpdate":"_vendor_progress","percent":42,"nested":{"a":[1,"}"]}}}`
	var n UpdateSessionNotification
	require.NoError(t, json.Unmarshal([]byte(in), &n))
	u, ok := n.Update.Value.(UnknownSessionUpdate)
	require.True(t, ok, "%#v", n.Update.Value)
	assert.Equal(t, "_vendor_progress", u.SessionUpdate)
	out, err := json.Marshal(n)
	require.NoError(t, err)
	assert.Equal(t, in, string(out))

	built, err := json.Marshal(SessionUpdate{Value: UnknownSessionUpdate{SessionUpdate: "_ping"}})
	require.NoError(t, err)
	assert.Equal(t, `{"sessionUpdate":"_ping"}`, string(built), "an Unknown variant built without Raw sends its tag alone")
}

// TestObjectWithVariant: a union that has fields of its own writes them
// beside its variant's, and reads both from the one object; an unknown
// variant kept whole does not repeat the common fields.
func TestObjectWithVariant(t *testing.T) {
	o := SessionConfigOption{ConfigID: "mode", Name: "Mode", Type: SessionConfigBoolean{CurrentValue: true}}
	out, err := json.Marshal(o)
	require.NoError(t, err)
	assert.JSONEq(t, `{"configId":"mode","name":"Mode","type":"boolean","currentValue":true}`, string(out))
	var back SessionConfigOption
	require.NoError(t, json.Unmarshal(out, &back))
	assert.Equal(t, o, back)

	in := `{"configId":"c","name":"C","type":"_slider","min":0,"max":9}`
	require.NoError(t, json.Unmarshal([]byte(in), &back))
	_, ok := back.Type.(UnknownSessionConfigOption)
	require.True(t, ok, "%#v", back.Type)
	out, err = json.Marshal(back)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out))
}

// TestScalarUnion: v2's RequestId is an integer or a string, never null;
// its ElicitationContentValue keeps any value no other variant takes (an
// object, null, a list that is not of strings) as received.
func TestScalarUnion(t *testing.T) {
	var id RequestID
	require.NoError(t, json.Unmarshal([]byte(`12`), &id))
	assert.Equal(t, RequestIDNumber(12), id.Value)
	require.NoError(t, json.Unmarshal([]byte(`"r"`), &id))
	assert.Equal(t, RequestIDStr("r"), id.Value)
	assert.ErrorContains(t, json.Unmarshal([]byte(`null`), &id), "RequestID matches none of its variants", "v2 IDs are never null")

	in := `{"s":"x","o":{"k":[1,{"z":null}]},"n":null,"mixed":[1,"a"],"list":["a"]}`
	var content map[string]ElicitationContentValue
	require.NoError(t, json.Unmarshal([]byte(in), &content))
	assert.Equal(t, ElicitationContentValueOther(`{"k":[1,{"z":null}]}`), content["o"].Value)
	assert.Equal(t, ElicitationContentValueOther(`null`), content["n"].Value)
	assert.Equal(t, ElicitationContentValueOther(`[1,"a"]`), content["mixed"].Value, "a list its variant refuses is the catch-all's")
	assert.Equal(t, ElicitationContentValueStringArray{"a"}, content["list"].Value)
	out, err := json.Marshal(content)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out))
}
