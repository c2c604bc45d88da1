package acprpc_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// json.RawMessage tests: a raw value goes out as one compact line, or not
// at all when it is not JSON.

const rawPretty = "{\n  \"content\": [\n    1,\n    2\n  ],\n  \"text\": \"a  b\"\n}"

// A handler's json.RawMessage result is compacted onto the answer's line
// (pretty-printed JSON would break the line framing); one that is empty or
// not JSON is answered -32603.
func TestRawResults(t *testing.T) {
	cases := []struct {
		raw  json.RawMessage
		want string // the result, or "" for -32603
	}{
		{json.RawMessage(rawPretty), `{"content":[1,2],"text":"a  b"}`},
		{json.RawMessage(" \t\"padded\"\r\n"), `"padded"`},
		{json.RawMessage(`{"compact":true}`), `{"compact":true}`},
		{json.RawMessage(""), ""},
		{json.RawMessage(" "), ""},
		{json.RawMessage(`{"a":`), ""},
		{json.RawMessage(`{"a":1}}`), ""},
		{json.RawMessage(`{"a":1} {"b":2}`), ""},
		{json.RawMessage("nope"), ""},
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		raw := make(chan json.RawMessage, 1)
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/raw": func(context.Context, *acprpc.Request) (any, error) { return <-raw, nil },
		}, nil)
		for i, tc := range cases {
			id := string(rune('1' + i))
			raw <- tc.raw
			p.Request(id, "x/raw", "")
			m := p.ExpectAnswer(ctx, id)
			if tc.want == "" {
				require.NotNil(t, m.Error, "%q answered %s", tc.raw, m.Raw)
				assert.EqualValues(t, acprpc.CodeInternalError, m.Error.Code)
				assert.Contains(t, m.Error.Message, "not valid JSON")
				continue
			}
			assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":`+tc.want+`}`, m.Raw)
		}
	})
}

// json.RawMessage params are compacted too; ones that are not JSON fail the
// Call or Notify at once, and nothing is sent.
func TestRawParams(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, nil, nil)

		for _, bad := range []json.RawMessage{json.RawMessage(""), json.RawMessage(`[1,`), json.RawMessage("{}\n{}")} {
			err := c.Call(ctx, "peer/bad", bad, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not valid JSON")
			assert.NotErrorIs(t, err, acprpc.ErrConnClosed)
			err = c.Notify(ctx, "peer/bad", bad)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not valid JSON")
		}
		assert.Zero(t, c.Stats().OutgoingInFlight, "a call that was never sent holds no ID")

		require.NoError(t, c.Notify(ctx, "peer/pretty", json.RawMessage(rawPretty)))
		m := p.ExpectNotification(ctx, "peer/pretty") // the first line: nothing bad was sent
		assert.Equal(t, `{"jsonrpc":"2.0","method":"peer/pretty","params":{"content":[1,2],"text":"a  b"}}`, m.Raw)

		done := make(chan error, 1)
		go func() { done <- c.Call(ctx, "peer/pretty", json.RawMessage(rawPretty), nil) }()
		m = p.ExpectRequest(ctx, "peer/pretty")
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"method":"peer/pretty","params":{"content":[1,2],"text":"a  b"}}`, m.Raw)
		p.Respond(string(m.ID), "null")
		require.NoError(t, wiretest.Recv(t, ctx, done))
	})
}

// A cancellation marker is a json.RawMessage too: a pretty-printed one goes
// out compact, and one that is not JSON gives way to -32800.
func TestRawCancelMarkers(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		_, p := wiretest.Connect(t, tr, wiretest.Mux{"x/pretty": wiretest.Hold(nil), "x/broken": wiretest.Hold(nil)},
			&acprpc.Options{CancelMarkers: map[string]json.RawMessage{
				"x/pretty": json.RawMessage("{\n \"stopReason\": \"cancelled\"\n}"),
				"x/broken": json.RawMessage(`{"stopReason":`),
			}})
		p.Request("1", "x/pretty", "")
		p.Cancel("1")
		m := p.ExpectAnswer(ctx, "1")
		assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, m.Raw)
		p.Request("2", "x/broken", "")
		p.Cancel("2")
		p.ExpectError(ctx, "2", acprpc.CodeRequestCancelled)
	})
}
