package acprpc_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Lines that are not usable messages are answered, -32700 with "id": null for
// non-JSON and -32600 for the rest (with the ID when one can be read); the
// connection goes on and nothing in flight either way is disturbed.
func TestStreamBadLines(t *testing.T) {
	cases := []struct {
		line string
		code int64
		id   string
	}{
		{`not json`, acprpc.CodeParseError, "null"},
		{`{"jsonrpc":"2.0","id":1,"method":`, acprpc.CodeParseError, "null"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`, acprpc.CodeParseError, "null"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`, acprpc.CodeParseError, "null"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\tb\"}", acprpc.CodeParseError, "null"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, acprpc.CodeInvalidRequest, "null"},
		{`[]`, acprpc.CodeInvalidRequest, "null"},
		{`42`, acprpc.CodeInvalidRequest, "null"},
		{`"a string"`, acprpc.CodeInvalidRequest, "null"},
		{`null`, acprpc.CodeInvalidRequest, "null"},
		{`true`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":1e-3,"method":"ping"}`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":1e19,"method":"ping"}`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"1.0","id":4,"method":"ping"}`, acprpc.CodeInvalidRequest, "4"},
		{`{"jsonrpc":"2.0","id":"five","method":7}`, acprpc.CodeInvalidRequest, `"five"`},
		{`{"jsonrpc":"2.0","id":6,"method":"ping","params":3}`, acprpc.CodeInvalidRequest, "6"},
		{`{"jsonrpc":"2.0","id":-7,"method":"ping","params":"x"}`, acprpc.CodeInvalidRequest, "-7"},
		{`{}`, acprpc.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":8}`, acprpc.CodeInvalidRequest, "8"},
		{`{"jsonrpc":"2.0","id":"nine"}`, acprpc.CodeInvalidRequest, `"nine"`},
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var held wiretest.Recorder
		release := make(chan struct{})
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"x/hold": held.Track(wiretest.Hold(release)), "ping": wiretest.Ping}, nil)
		p.Request(`"held"`, "x/hold", "")
		heldCtx := held.Context(held.NextStart(t, ctx))
		callDone := make(chan error, 1)
		var callResult string
		go func() { callDone <- c.Call(ctx, "peer/slow", nil, &callResult) }()
		call := p.ExpectRequest(ctx, "peer/slow")

		for _, tc := range cases {
			p.Send(tc.line)
			m := p.Expect(ctx)
			if assert.True(t, m.IsResponse(), "%s: got %s", tc.line, m.Raw) && assert.NotNil(t, m.Error, tc.line) {
				assert.Equal(t, tc.code, m.Error.Code, "%s: got %s", tc.line, m.Raw)
				assert.Equal(t, tc.id, string(m.ID), "%s: got %s", tc.line, m.Raw)
				assert.NotEmpty(t, m.Error.Message)
			}
		}

		// Nothing in flight was touched, and everything still works.
		assert.NoError(t, heldCtx.Err())
		select {
		case err := <-callDone:
			t.Fatalf("the pending call returned: %v", err)
		default:
		}
		p.Request("1", "ping", "")
		p.ExpectResult(ctx, "1", `"pong"`)
		p.Respond(string(call.ID), `"answered"`)
		require.NoError(t, wiretest.Recv(t, ctx, callDone))
		assert.Equal(t, "answered", callResult)
		close(release)
		p.ExpectResult(ctx, `"held"`, `"held"`)
	})
}

// Answers the Conn cannot use (unknown, foreign or unreadable IDs, an error
// for a line it sent that the peer could not read) are dropped without a
// reply, and a member name spelled with escapes is still that member.
func TestStreamQuietLinesAndEscapedKeys(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"ping": wiretest.Ping}, nil)
		p.Respond(`"zz"`, `1`)
		p.Respond(`-5`, `1`)
		p.Respond(`77`, `1`)
		p.RespondError(`null`, acprpc.CodeParseError, "Parse error")
		p.Send(`{"jsonrpc":"2.0","\u0069d":3,"method":"p\u0069ng"}`)
		p.ExpectResult(ctx, "3", `"pong"`)
		require.NoError(t, c.Close())
		assert.Empty(t, p.Rest(ctx))
	})
}

// CRLF line ends and blank lines are accepted, wherever they come.
func TestStreamCRLFAndBlankLines(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"ping": wiretest.Ping, "x/wait": wiretest.Hold(nil)}, nil)
		p.SendRaw("\r\n\n" +
			wiretest.RequestLine("1", "ping", "") + "\r\n" +
			"\n\r\n\n" +
			wiretest.RequestLine("2", "ping", `{"a":"b"}`) + "\n" +
			"   \t \r\n" +
			wiretest.RequestLine("3", "x/wait", "") + "\r\n" +
			wiretest.CancelLine("3") + "\r\n" +
			"\r\n")
		got := p.ExpectByID(ctx, 3)
		assert.JSONEq(t, `"pong"`, string(got["1"].Result))
		assert.JSONEq(t, `"pong"`, string(got["2"].Result))
		assert.EqualValues(t, acprpc.CodeRequestCancelled, got["3"].Code())
		p.SendRaw(wiretest.RequestLine("4", "ping", "") + "\r\n")
		p.ExpectResult(ctx, "4", `"pong"`)
		require.NoError(t, c.Close())
		assert.Empty(t, p.Rest(ctx), "a blank line was answered")
	}, wiretest.Streams...)
}

// A line over MaxMessageSize is answered -32600, with its ID when the ID
// comes before the cut, and skipped; a line of exactly the limit is fine;
// the connection goes on and nothing in flight is disturbed.
func TestStreamOverLongLine(t *testing.T) {
	const limit = 1000
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var held wiretest.Recorder
		release := make(chan struct{})
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"x/hold": held.Track(wiretest.Hold(release)), "echo": wiretest.Echo},
			&acprpc.Options{MaxMessageSize: limit})
		p.Request("1", "x/hold", "")
		heldCtx := held.Context(held.NextStart(t, ctx))

		pad := func(n int) string { return `"` + strings.Repeat("x", n) + `"` }
		// The ID first: it is read from the part that was kept.
		p.Request("9", "echo", `{"pad":`+pad(2*limit)+`}`)
		m := p.ExpectError(ctx, "9", acprpc.CodeInvalidRequest)
		assert.Contains(t, m.Error.Message, "exceeds")
		// Longer than any read buffer.
		p.Request(`"big"`, "echo", `{"pad":`+pad(200<<10)+`}`)
		p.ExpectError(ctx, `"big"`, acprpc.CodeInvalidRequest)
		// The ID after the long part is found; no JSON at all: "id": null.
		p.Send(`{"jsonrpc":"2.0","method":"echo","params":{"pad":` + pad(8<<10) + `},"id":10}`)
		p.ExpectError(ctx, "10", acprpc.CodeInvalidRequest)
		p.Send(strings.Repeat("z", 3*limit))
		p.ExpectError(ctx, "null", acprpc.CodeInvalidRequest)
		// A line of exactly the limit is served, with CRLF too.
		exact := func(id string, size int) string {
			head := `{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":{"pad":`
			return head + pad(size-len(head)-len(`""}}`)) + `}}`
		}
		line := exact("11", limit)
		require.Len(t, line, limit)
		p.Send(line)
		p.ExpectAnswer(ctx, "11")
		p.SendRaw(line + "\r\n")
		p.ExpectAnswer(ctx, "11")
		// One byte more is not.
		line = exact("12", limit+1)
		require.Len(t, line, limit+1)
		p.Send(line)
		p.ExpectError(ctx, "12", acprpc.CodeInvalidRequest)

		assert.NoError(t, heldCtx.Err())
		p.Request("13", "echo", `[1]`)
		p.ExpectResult(ctx, "13", `[1]`)
		close(release)
		p.ExpectResult(ctx, "1", `"held"`)
		assert.Equal(t, 0, c.Stats().IncomingInFlight)
	})
}

// An over-long answer to one of our calls fails that call, and only it.
func TestStreamOverLongAnswerFailsItsCall(t *testing.T) {
	const limit = 1000
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, nil, &acprpc.Options{MaxMessageSize: limit})
		done := make(chan error, 2)
		var small string
		go func() { done <- c.Call(ctx, "peer/big", nil, nil) }()
		big := p.ExpectRequest(ctx, "peer/big")
		go func() { done <- c.Call(ctx, "peer/small", nil, &small) }()
		sm := p.ExpectRequest(ctx, "peer/small")

		p.Respond(string(big.ID), `"`+strings.Repeat("y", 2*limit)+`"`)
		err := wiretest.Recv(t, ctx, done)
		var rpcErr *acprpc.Error
		require.ErrorAs(t, err, &rpcErr)
		assert.EqualValues(t, acprpc.CodeInternalError, rpcErr.Code)
		assert.Contains(t, rpcErr.Message, "too large")

		p.Respond(string(sm.ID), `"ok"`)
		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.Equal(t, "ok", small)
	})
}
