package acprpc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Response tests: what the peer's answers to our calls may look like, and
// that none of them is ever answered.

// respCall is one of our calls to a scripted peer, as the peer saw it.
type respCall struct {
	id     string // its ID's JSON text
	result chan respOutcome
}

type respOutcome struct {
	value any
	err   error
}

// respStart makes a call and returns it once the peer has read it.
func respStart(ctx context.Context, t *testing.T, c *acprpc.Conn, p *wiretest.Peer) respCall {
	t.Helper()
	rc := respCall{result: make(chan respOutcome, 1)}
	go func() {
		var v any
		err := c.Call(ctx, "peer/answer", nil, &v)
		rc.result <- respOutcome{v, err}
	}()
	rc.id = string(p.ExpectRequest(ctx, "peer/answer").ID)
	return rc
}

// A response is never answered, whatever is wrong with it: one whose
// "jsonrpc" is not "2.0", or that has both a result and an error, fails the
// call it names with a clear error instead, and one that names no call of
// ours is only logged. Peers that write every member send "method":null,
// "error":null or "result":null beside the member that counts: those are
// ordinary answers.
func TestResponsesNeverAnswered(t *testing.T) {
	type want struct {
		value any    // the result, on success
		code  int64  // the error's code, on failure
		text  string // in the error's message
	}
	cases := []struct {
		name string
		line func(id string) string
		want want
	}{
		{"error null beside a result", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":"ok","error":null}`
		}, want{value: "ok"}},
		{"result null beside an error", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":null,"error":{"code":-32001,"message":"nope"}}`
		}, want{code: -32001, text: "nope"}},
		{"method null", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"method":null,"result":"ok"}`
		}, want{value: "ok"}},
		{"every member, result null", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"method":null,"params":null,"result":null,"error":null}`
		}, want{value: nil}},
		{"jsonrpc 1.0", func(id string) string {
			return `{"jsonrpc":"1.0","id":` + id + `,"result":"ok"}`
		}, want{code: acprpc.CodeInternalError, text: `invalid response: "jsonrpc" must be "2.0"`}},
		{"jsonrpc not a string", func(id string) string {
			return `{"jsonrpc":2,"id":` + id + `,"error":{"code":1,"message":"x"}}`
		}, want{code: acprpc.CodeInternalError, text: `invalid response`}},
		{"both a result and an error", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":"ok","error":{"code":-32001,"message":"nope"}}`
		}, want{code: acprpc.CodeInternalError, text: "invalid response: it has both a result and an error"}},
		{"a null error alone", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"error":null}`
		}, want{code: acprpc.CodeInternalError, text: "invalid response"}},
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"x/ping": wiretest.Ping}, nil)
		for i, tc := range cases {
			rc := respStart(ctx, t, c, p)
			p.Send(tc.line(rc.id))
			out := wiretest.Recv(t, ctx, rc.result)
			if tc.want.text == "" {
				assert.NoError(t, out.err, tc.name)
				assert.Equal(t, tc.want.value, out.value, tc.name)
			} else {
				var rpcErr *acprpc.Error
				if assert.ErrorAs(t, out.err, &rpcErr, tc.name) {
					assert.Equal(t, tc.want.code, rpcErr.Code, tc.name)
					assert.Contains(t, rpcErr.Message, tc.want.text, tc.name)
				}
				assert.NotErrorIs(t, out.err, acprpc.ErrConnClosed, tc.name)
			}
			// Nothing was written for the response: the next line is the
			// ping's answer.
			id := `"ping-` + string(rune('a'+i)) + `"`
			p.Request(id, "x/ping", "")
			p.ExpectResult(ctx, id, `"pong"`)
		}
		// Invalid responses that name no call of ours, or none at all.
		for _, line := range []string{
			`{"jsonrpc":"1.0","id":999,"result":"ok"}`,
			`{"jsonrpc":"1.0","id":"theirs","result":"ok"}`,
			`{"jsonrpc":"2.0","id":998,"method":null,"error":{"code":1,"message":"x"}}`,
			`{"jsonrpc":"2.0","id":null,"result":"ok","error":{"code":1,"message":"x"}}`,
			`{"jsonrpc":"1.0","result":"ok"}`,
		} {
			p.Send(line)
		}
		p.Request("0", "x/ping", "")
		p.ExpectResult(ctx, "0", `"pong"`)
		require.NoError(t, c.Err())
		assert.Zero(t, c.Stats().OutgoingInFlight)
	})
}
