package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
