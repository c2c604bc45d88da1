package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// A message of the scope read last takes its scope without a copy; one of
// another scope, or spelled with escapes, is decoded as Parse decodes it,
// even when its raw text reads like the last one. A zero Reader picks up
// no scope.
func TestReaderScope(t *testing.T) {
	line := func(sid string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `"}}`)
	}
	for _, c := range []struct{ last, raw, want string }{
		{"s1", "s1", "s1"},
		{"s1", "s2", "s2"},
		{"", "s1", "s1"},
		{`\u00731`, `\u00731`, "s1"}, // the last ID was a literal backslash; this one is an escape
		{"s1", `\u00731`, "s1"},
	} {
		r := Reader{Scope: "sessionId", last: c.last}
		m, p := r.Read(line(c.raw))
		require.Nil(t, p, c.raw)
		assert.Equal(t, c.want, m.Scope, "raw %s after %s", c.raw, c.last)
		assert.Equal(t, c.want, r.last, "the scope read is the last one")
	}
	msg := line("sess_0123456789abcdef")
	m, _ := Parse(msg)
	assert.Empty(t, m.Scope, "a zero Reader picks up no scope")
	names := map[string]string{"session/update": "session/update"} // the method's name is shared, not counted
	r := Reader{Scope: "sessionId", Names: names}
	_, _ = r.Read(msg)
	reused := testing.AllocsPerRun(100, func() { _, _ = r.Read(msg) })
	fresh := testing.AllocsPerRun(100, func() {
		r := Reader{Scope: "sessionId", Names: names}
		_, _ = r.Read(msg)
	})
	assert.Zero(t, reused)
	assert.Equal(t, float64(1), fresh, "a new scope is copied")
}
