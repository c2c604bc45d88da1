package demo

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

const v2Init = `A→C {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"}}}`

func TestRenderV2CleanTurn(t *testing.T) {
	lines := record(t,
		`C→A {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2}}`,
		v2Init,
		`C→A {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`,
		`A→C {"jsonrpc":"2.0","id":2,"result":{"messageId":"m1"}}`,
		`A→C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"running"}}}`,
		`A→C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}`,
	)
	var out bytes.Buffer
	sum := Render(&out, lines, false)
	t.Log(out.String())
	assert.True(t, sum.OK)
	assert.Equal(t, "end_turn", sum.StopReason)
	assert.Contains(t, out.String(), "      • session/update  state_update running\n")
	assert.Contains(t, out.String(), "  • session/update  state_update idle, stopReason end_turn\n")
	assert.Contains(t, out.String(), `✓ #c2 was answered with its messageId "m1"`)
	assert.Contains(t, out.String(), "✓ 1 session/update of the work, then 1 idle state_update, 0 after")
}

func TestRenderV2FlagsBrokenEndings(t *testing.T) {
	lines := record(t,
		v2Init,
		`C→A {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`,
		`A→C {"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}`,
		`A→C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}`,
		`A→C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"r","content":{"type":"text","text":"late"}}}}`,
		`A→C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}`,
		`C→A {"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`,
		`A→C {"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"boom"}}`,
	)
	var out bytes.Buffer
	sum := Render(&out, lines, false)
	t.Log(out.String())
	assert.False(t, sum.OK)
	assert.Contains(t, out.String(), "✗ #c2 was answered with its messageId")
	assert.Contains(t, out.String(), "✗ 0 session/update of the work, then 2 idle state_update, 1 after")
	assert.Contains(t, out.String(), "✗ #c3 was not inserted: error -32603")
}
