package wiretest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

func TestRecorderFollowsHandlers(t *testing.T) {
	ctx := Context(t)
	var rec Recorder
	note := make(chan struct{})
	h := Mux{
		"block": rec.Block,
		"ping":  rec.Track(Ping),
		"note": rec.Track(func(context.Context, *acprpc.Request) (any, error) {
			close(note)
			return nil, nil
		}),
	}
	_, p := Connect(t, Transports[0], h, &acprpc.Options{CancelGrace: -1})
	p.Request(`"b"`, "block", "")
	assert.Equal(t, `"b"`, rec.NextStart(t, ctx))
	assert.Equal(t, 1, rec.Running())
	p.Request("2", "ping", "")
	assert.Equal(t, "2", rec.NextStart(t, ctx))
	key, cause := rec.NextReturn(t, ctx)
	assert.Equal(t, "2", key)
	assert.NoError(t, cause, "answered before its context ended")
	p.ExpectResult(ctx, "2", `"pong"`)
	p.Notify("note", "")
	assert.Equal(t, "note", rec.NextStart(t, ctx), "a notification is filed by its method")
	Recv(t, ctx, note)
	key, _ = rec.NextReturn(t, ctx)
	assert.Equal(t, "note", key)

	p.Cancel(`"b"`)
	key, cause = rec.NextReturn(t, ctx)
	assert.Equal(t, `"b"`, key)
	assert.ErrorIs(t, cause, acprpc.ErrPeerCancelled)
	p.ExpectError(ctx, `"b"`, acprpc.CodeRequestCancelled)
	assert.ErrorIs(t, context.Cause(rec.Context(`"b"`)), acprpc.ErrPeerCancelled)
	assert.Nil(t, rec.Context("nothing"))
	cause, ok := rec.Returned(`"b"`)
	assert.True(t, ok)
	assert.ErrorIs(t, cause, acprpc.ErrPeerCancelled)
	_, ok = rec.Returned("nothing")
	assert.False(t, ok)
	assert.Equal(t, []string{`"b"`, "2", "note"}, rec.Starts())

	p.Settle(ctx)
	require.NoError(t, rec.AwaitIdle(ctx))
	assert.Equal(t, []string{"2", "note", `"b"`}, rec.Returns())
}

func TestRecorderChecksCauses(t *testing.T) {
	ctx := Context(t)
	var rec Recorder
	_, p := Connect(t, Transports[0], Mux{"block": rec.Block}, &acprpc.Options{CancelGrace: -1})
	p.Request("1", "block", "")
	p.Request("2", "block", "")
	rec.NextStart(t, ctx)
	rec.NextStart(t, ctx)
	p.Cancel("1")
	p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
	p.Settle(ctx)
	ft := &failures{TB: t}
	rec.CheckCauses(ft, acprpc.ErrConnClosed)
	assert.Len(t, ft.errors, 1, "1 was cancelled by the peer")
	ft = &failures{TB: t}
	rec.CheckCauses(ft, acprpc.ErrPeerCancelled)
	assert.Len(t, ft.errors, 1, "2 was closed")
}

func TestRecorderAwaitsIdle(t *testing.T) {
	for _, onlyCount := range []bool{false, true} {
		t.Run(fmt.Sprintf("OnlyCount=%v", onlyCount), func(t *testing.T) { testRecorderAwaitsIdle(t, onlyCount) })
	}
}

func testRecorderAwaitsIdle(t *testing.T, onlyCount bool) {
	ctx := Context(t)
	g := &Recorder{OnlyCount: onlyCount}
	require.NoError(t, g.AwaitIdle(ctx))
	release, started := make(chan struct{}), make(chan struct{})
	h := g.Track(func(context.Context, *acprpc.Request) (any, error) {
		close(started)
		<-release
		return nil, nil
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = h(ctx, &acprpc.Request{})
	}()
	Recv(t, ctx, started)
	assert.Equal(t, 1, g.Running())
	short, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, g.AwaitIdle(short), context.Canceled)
	idle := make(chan error, 1)
	go func() { idle <- g.AwaitIdle(ctx) }()
	close(release)
	assert.NoError(t, Recv(t, ctx, idle))
	Recv(t, ctx, done)
}
