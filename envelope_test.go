package acprpc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acpkit/acprpc"
)

// TestReadEnvelopeAsTheConnReadsIt reads the envelope of each kind of
// message, and of the invalid ones a Conn answers, with the ID the Conn's
// answer carries.
func TestReadEnvelopeAsTheConnReadsIt(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		kind acprpc.MessageKind
		id   string
		meth string
		sess string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`, acprpc.KindRequest, "7", "session/prompt", "s1"},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\u0031"}}`, acprpc.KindNotification, "", "session/update", "s1"},
		{`{"jsonrpc":"2.0","id":"a","result":{"sessionId":"s2"}}`, acprpc.KindResult, `"a"`, "", ""},
		{`{"jsonrpc":"2.0","id":1.0,"error":{"code":-32800,"message":"cancelled"}}`, acprpc.KindError, "1.0", "", ""},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, acprpc.KindError, "", "", ""},
		{`{"jsonrpc":"2.0","id":9,"method":"m","params":{"sessionId":7}}`, acprpc.KindRequest, "9", "m", ""},
		{`{"jsonrpc":"1.0","id":3,"method":"m"}`, acprpc.KindInvalid, "3", "", ""},            // refused with its ID
		{`{"jsonrpc":"2.0","id":1.5,"method":"m"}`, acprpc.KindInvalid, "", "", ""},           // an ID no Conn carries
		{`{"jsonrpc":"2.0","id":4,"method":"m","params":1}`, acprpc.KindInvalid, "4", "", ""}, // params neither object nor array
		{`[{"jsonrpc":"2.0","id":1,"method":"m"}]`, acprpc.KindInvalid, "", "", ""},
		{`{"jsonrpc":"2.0","id":1,`, acprpc.KindInvalid, "", "", ""},
	} {
		env := acprpc.ReadEnvelope([]byte(tc.msg))
		assert.Equal(t, tc.kind, env.Kind, tc.msg)
		assert.Equal(t, tc.id, env.ID.String(), tc.msg)
		assert.Equal(t, tc.meth, env.Method, tc.msg)
		assert.Equal(t, tc.sess, env.SessionID, tc.msg)
	}
}
