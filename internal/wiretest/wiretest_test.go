package wiretest

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/acpkit/acprpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

func TestTransportsConverse(t *testing.T) {
	for _, tr := range Transports {
		t.Run(tr.Name, func(t *testing.T) {
			ctx := Context(t)
			_, p := Connect(t, tr, Mux{"echo": Echo}, nil)
			p.Request("1", "echo", `{"k":"v"}`)
			p.ExpectResult(ctx, "1", `{"k":"v"}`)
		})
	}
}

func TestPeerSeesEOFWhenConnCloses(t *testing.T) {
	for _, tr := range Transports {
		t.Run(tr.Name, func(t *testing.T) {
			ctx := Context(t)
			c, p := Connect(t, tr, nil, nil)
			require.NoError(t, c.Close())
			_, err := p.Next(ctx)
			assert.ErrorIs(t, err, io.EOF)
		})
	}
}

func TestNextIsBoundedByContext(t *testing.T) {
	_, p := Connect(t, Transports[0], nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Next(ctx)
	assert.True(t, errors.Is(err, context.Canceled), err)
}

func TestLinkRecords(t *testing.T) {
	for _, tr := range Transports {
		t.Run(tr.Name, func(t *testing.T) {
			ctx := Context(t)
			l := NewWire(t, Side{}, Side{Handler: Mux{"echo": Echo}}, With{Relay: tr})
			var out map[string]int
			require.NoError(t, l.A.Call(ctx, "echo", map[string]int{"n": 3}, &out))
			assert.Equal(t, 3, out["n"])
			req := l.Await(ctx, AtoB, func(m Msg) bool { return m.IsRequestOf("echo") })
			assert.Equal(t, "1", string(req.ID))
			answers := func(m Msg) bool { return m.IsAnswerTo("1") }
			l.Await(ctx, BtoA, answers)
			assert.Equal(t, 1, l.Count(BtoA, answers))
			err := l.B.Call(ctx, "nothing", nil, nil)
			var rpcErr *acprpc.Error
			require.ErrorAs(t, err, &rpcErr)
			assert.EqualValues(t, acprpc.CodeMethodNotFound, rpcErr.Code)
		})
	}
}
