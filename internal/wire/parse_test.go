package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Member finds a member however its name is spelled, and only that member:
// a name that merely starts or ends like it is another member.
func TestMemberNames(t *testing.T) {
	obj := []byte(`{"stop":1,"stopReasons":2,"\u0073topReason":"end_turn","xstopReason":3}`)
	assert.Equal(t, `"end_turn"`, string(Member(obj, "stopReason")))
	assert.Equal(t, `1`, string(Member(obj, "stop")))
	assert.Nil(t, Member(obj, "Reason"))
	assert.Nil(t, Member(obj, ""))
	assert.Equal(t, `2`, string(Member([]byte(`{"":2}`), "")))
	assert.Nil(t, Member([]byte(`{"stopReason":`), "stopReason"), "not an object")
}

// Looking up a member allocates nothing when the names have no escapes:
// a v2 work looks into every session/update it sends.
func TestMemberAllocations(t *testing.T) {
	update := []byte(`{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`)
	allocs := testing.AllocsPerRun(100, func() {
		if string(Member(Member(update, "update"), "sessionUpdate")) != `"agent_message_chunk"` {
			t.Fatal("member not found")
		}
	})
	assert.Zero(t, allocs)
}
