package acprpc_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// TestStressCascadeSendsOneCancelPerCall cancels many turns at once, each
// holding nested calls to the client, some of which the client answers at
// once, as acpbench burst does over stdio: the agent reads a burst of
// $/cancel_requests and its cancels wake every nested call together. Every
// held call must get exactly one $/cancel_request, an answered one at most
// one, and every call and turn must return.
func TestStressCascadeSendsOneCancelPerCall(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const turns, maxNested = 200, 4
	agentIn, clientOut, err := os.Pipe()
	require.NoError(t, err)
	clientIn, agentOut, err := os.Pipe()
	require.NoError(t, err)

	var started, returned sync.WaitGroup
	started.Add(turns)
	returned.Add(turns)
	agent := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		defer returned.Done()
		var p struct{ Nested, Held int }
		if err := req.DecodeParams(&p); err != nil {
			return nil, err
		}
		conn := acprpc.ConnFromContext(ctx)
		var wg sync.WaitGroup
		for i := range p.Nested {
			wg.Go(func() {
				method := "x/answer"
				if i < p.Held {
					method = "x/hold"
				}
				_ = conn.Call(ctx, method, map[string]int{"i": i}, nil, acprpc.WaitAfterCancel(time.Minute))
			})
		}
		started.Done()
		wg.Wait()
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})

	var mu sync.Mutex
	cancels := map[string]int{} // nested call ID -> $/cancel_requests received
	held := map[string]bool{}
	var heldCount atomic.Int32
	client := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method == "x/hold" {
			mu.Lock()
			held[req.ID.String()] = true
			mu.Unlock()
			heldCount.Add(1)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		return "ok", nil
	})
	hooks := acprpc.Hooks{Received: func(_ context.Context, m *acprpc.Message) {
		if m.Method != acprpc.MethodCancelRequest {
			return
		}
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Raw, &struct {
			Params any `json:"params"`
		}{Params: &p}) == nil {
			mu.Lock()
			cancels[string(p.RequestID)]++
			mu.Unlock()
		}
	}}
	agentConn := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(agentIn, agentOut), agent, nil)
	clientConn := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(clientIn, clientOut), client, &acprpc.Options{Hooks: hooks})

	rng := rand.New(rand.NewPCG(seed, 0))
	ctx, cancel := context.WithCancel(context.Background())
	var calls sync.WaitGroup
	wantHeld := int32(0)
	for range turns {
		nested := 1 + rng.IntN(maxNested)
		h := rng.IntN(nested + 1)
		wantHeld += int32(h)
		calls.Go(func() {
			err := clientConn.Call(ctx, "x/turn", map[string]int{"nested": nested, "held": h}, nil)
			assert.ErrorIs(t, err, acprpc.ErrCancelled)
		})
	}
	started.Wait()
	for heldCount.Load() < wantHeld { // every held call has reached the client
		runtime.Gosched()
	}
	cancel() // every turn at once: the agent reads a burst of $/cancel_requests
	calls.Wait()
	returned.Wait() // every nested call has returned: its cancel, if owed, is sent
	require.NoError(t, clientConn.Close())
	require.NoError(t, agentConn.Close())

	mu.Lock()
	defer mu.Unlock()
	for id := range held {
		assert.Equal(t, 1, cancels[id], "held call %s", id)
	}
	for id, n := range cancels {
		assert.LessOrEqual(t, n, 1, "call %s", id)
	}
}
