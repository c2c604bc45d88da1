package wiretest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

func TestParseKeepsIDBytes(t *testing.T) {
	for _, id := range []string{`-1`, `9007199254740993`, `"x\u0041"`, `null`, `1`, `"1"`} {
		m, err := Parse(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
		require.NoError(t, err)
		assert.Equal(t, id, string(m.ID))
		assert.True(t, m.IsResponse())
	}
}

func TestParseRejects(t *testing.T) {
	for _, line := range []string{
		`not json`,
		`[]`,
		`{"id":1,"result":1}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","result":1}`,
	} {
		_, err := Parse(line)
		assert.Error(t, err, line)
	}
	m, err := Parse(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}`)
	require.NoError(t, err)
	assert.True(t, m.IsNotification())
	assert.Equal(t, "7", string(m.ParamMember("requestId")))
}

func TestLineBuilders(t *testing.T) {
	assert.Equal(t, `{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}}`, RequestLine(`"a"`, "m", `{"x":1}`))
	assert.Equal(t, `{"jsonrpc":"2.0","method":"m"}`, notificationLine("m", ""))
	assert.Equal(t, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":-1}}`, CancelLine("-1"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}}`,
		errorLine("2", -32800, "Request cancelled"))
	assert.True(t, jsonEqual(`{"a":1,"b":[2]}`, ` { "b":[2], "a":1 }`))
	assert.False(t, jsonEqual(`{"a":1}`, `{"a":"1"}`))
}

func TestMsgMatchers(t *testing.T) {
	parse := func(line string) Msg {
		m, err := Parse(line)
		require.NoError(t, err)
		return m
	}
	answer := parse(`{"jsonrpc":"2.0","id":"1","result":{}}`)
	assert.True(t, answer.IsAnswerTo(`"1"`))
	assert.False(t, answer.IsAnswerTo("1"), "the ID as the wire spelled it")
	request := parse(RequestLine("7", "session/prompt", `{}`))
	assert.True(t, request.IsRequestOf("session/prompt"))
	assert.False(t, request.IsRequestOf("session/new"))
	assert.False(t, request.IsAnswerTo("7"), "a request answers nothing")
	cancel := parse(CancelLine("7"))
	assert.True(t, cancel.IsCancelOf("7"))
	assert.False(t, cancel.IsCancelOf(`"7"`))
	assert.False(t, cancel.IsRequestOf(acprpc.MethodCancelRequest), "a cancel is a notification")
}
