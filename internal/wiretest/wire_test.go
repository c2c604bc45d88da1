package wiretest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

func TestLinkRecords(t *testing.T) {
	Run(t, func(t *testing.T, tr Transport) {
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

func TestWireSettles(t *testing.T) {
	ctx := Context(t)
	var g Recorder
	w := NewWire(t, Side{}, Side{Handler: g.Track(Mux{"echo": Echo, "block": Hold(nil)}.Handle)}, With{Tapped: true})
	for i := range 20 {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.A.Call(cctx, "block", []int{i}, nil) }()
		cancel()
		assert.ErrorIs(t, Recv(t, ctx, done), acprpc.ErrCancelled)
		require.NoError(t, w.A.Call(ctx, "echo", []int{i}, nil))
	}
	require.NoError(t, w.Settle(ctx))
	require.NoError(t, g.AwaitIdle(ctx))
	w.Ledger.CheckExactlyOnce(t, AtoB)
	w.Ledger.CheckNoDuplicates(t)
	assert.Equal(t, 1, w.Ledger.marked(AtoB))
	assert.Equal(t, 1, w.Ledger.marked(BtoA))
	assert.Zero(t, w.Ledger.Notifications(AtoB, markMethod), "the marks are not the test's notifications")
	require.NoError(t, w.Settle(ctx))
	assert.Equal(t, 2, w.Ledger.marked(AtoB))
}
