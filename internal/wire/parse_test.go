package wire

import (
	"bytes"
	"encoding/json"
	"strings"
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

// A method name reads the same whether it is one of the Reader's Names or
// the peer's own, written with escapes or without.
func TestMethodNames(t *testing.T) {
	for line, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`:  "session/prompt",
		`{"jsonrpc":"2.0","id":1,"method":"session\/prompt","params":{}}`: "session/prompt",
		`{"jsonrpc":"2.0","method":"session/update","params":{}}`:         "session/update",
		`{"jsonrpc":"2.0","id":2,"method":"_acme/ping"}`:                  "_acme/ping",
		`{"jsonrpc":"2.0","id":2,"method":"_acme\u002fping"}`:             "_acme/ping",
		`{"jsonrpc":"2.0","id":3,"method":"session/promp"}`:               "session/promp",
		`{"jsonrpc":"2.0","id":3,"method":""}`:                            "",
	} {
		r := Reader{Names: map[string]string{"session/prompt": "session/prompt", "session/update": "session/update"}}
		msg, p := r.Read([]byte(line))
		require.Nil(t, p, line)
		assert.Equal(t, want, msg.Method, line)
	}
}

// Reading a request for one of the Reader's Names allocates nothing for
// the name: the read loop of every connection does it for every message.
func TestMethodNameAllocations(t *testing.T) {
	known := []byte(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s"}}`)
	other := []byte(`{"jsonrpc":"2.0","id":7,"method":"_acme/prompt1","params":{"sessionId":"s"}}`)
	parse := func(line []byte) func() {
		return func() {
			r := Reader{Names: map[string]string{"session/prompt": "session/prompt"}}
			if _, p := r.Read(line); p != nil {
				t.Fatal(p)
			}
		}
	}
	assert.Equal(t, testing.AllocsPerRun(100, parse(other))-1, testing.AllocsPerRun(100, parse(known)),
		"a known method saves exactly the name's copy")
}

// FuzzFrameString: a method name is written as encoding/json writes the
// string (HTML characters as they are), whichever of String's ways it takes.
func FuzzFrameString(f *testing.F) {
	for _, seed := range []string{"session/prompt", `a"b`, `back\slash`, "tab\there", "é", "\xff", "<&>", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		var fr Frame
		fr.String(s)
		assert.Equal(t, strings.TrimSuffix(want.String(), "\n"), fr.Buf.String(), "%q", s)
	})
}
