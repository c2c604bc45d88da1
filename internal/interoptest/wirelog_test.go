package interoptest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// TestWireLogRecordsBothWays: a WireLog holds every message a Conn
// receives and sends, as on the wire, each request before its answer, and
// the hooks it wraps still run.
func TestWireLogRecordsBothWays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var log WireLog
	received := 0
	h := acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) { return map[string]int{"n": 1}, nil })
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{Hooks: log.Hooks(acprpc.Hooks{
		Received: func(context.Context, *acprpc.Message) { received++ },
	})})
	p.Send(`{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":1}}`)
	p.ExpectResult(ctx, "7", `{"n":1}`)
	require.Equal(t, []GoldenMessage{
		{Dir: "in", Msg: []byte(`{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":1}}`)},
		{Dir: "out", Msg: []byte(`{"jsonrpc":"2.0","id":7,"result":{"n":1}}`)},
	}, log.Messages())
	assert.Equal(t, 1, received, "the wrapped hook ran")
}
