package acprpc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// ConnFromContext given a context that no handler was given panics with a
// message that says so and what to pass, instead of returning a nil Conn
// whose first use panics far from the mistake; a handler's context, and
// one derived from it, give the Conn.
func TestConnFromContextOutsideAHandlerSaysSo(t *testing.T) {
	assert.PanicsWithValue(t, "acprpc: ConnFromContext: ctx is not a handler's context (it carries no Conn): "+
		"pass the ctx the handler was given, or one derived from it; outside a handler, use the *Conn you made",
		func() { acprpc.ConnFromContext(context.Background()) })

	ctx := wiretest.Context(t)
	got := make(chan *acprpc.Conn, 1)
	h := acprpc.HandlerFunc(func(ctx context.Context, _ *acprpc.Request) (any, error) {
		derived, cancel := context.WithCancel(ctx)
		defer cancel()
		got <- acprpc.ConnFromContext(derived)
		return "ok", nil
	})
	c, p := wiretest.Connect(t, wiretest.Transports[0], h, nil)
	p.Request("1", "_my/method", "")
	p.ExpectResult(ctx, "1", `"ok"`)
	require.Same(t, c, wiretest.Recv(t, ctx, got))
}
