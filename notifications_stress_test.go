package acprpc_test

import (
	"context"
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

// TestStressAnswersBehindNotifications has many callers at once on one
// connection, each request's handler sending a count of notifications of
// its own before its answer, and a notification handler that is slow by
// turns, so that answers pile up behind notifications with barriers of
// every count, some given up on by their callers: every answer must reach
// its caller after every notification sent before it, and every call must
// return.
func TestStressAnswersBehindNotifications(t *testing.T) {
	pairs := map[string]func(t *testing.T) (agent, client acprpc.Transport){
		"Pipe": func(*testing.T) (acprpc.Transport, acprpc.Transport) { return acprpc.Pipe() },
		"os.Pipe": func(t *testing.T) (acprpc.Transport, acprpc.Transport) {
			agentIn, clientOut, err := os.Pipe()
			require.NoError(t, err)
			clientIn, agentOut, err := os.Pipe()
			require.NoError(t, err)
			return acprpc.NewStreamPipes(agentIn, agentOut), acprpc.NewStreamPipes(clientIn, clientOut)
		},
	}
	for name, pair := range pairs {
		t.Run(name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			stressAnswersBehindNotifications(t, seed, pair)
		})
	}
}

type notesParams struct {
	N     int `json:"n"`
	Count int `json:"count"`
}

func stressAnswersBehindNotifications(t *testing.T, seed uint64, pair func(*testing.T) (acprpc.Transport, acprpc.Transport)) {
	const callers, calls, maxNotes = 32, 40, 30
	handled := make([]atomic.Int32, callers*calls)
	agentT, clientT := pair(t)
	agent := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		var p notesParams
		if err := req.DecodeParams(&p); err != nil {
			return nil, err
		}
		conn := acprpc.ConnFromContext(ctx)
		for range p.Count {
			if err := conn.Notify(ctx, "x/note", notesParams{N: p.N}); err != nil {
				return nil, err
			}
		}
		return p, nil
	})
	var slow atomic.Uint32
	client := acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
		var p notesParams
		if err := req.DecodeParams(&p); err != nil {
			return nil, err
		}
		if slow.Add(1)%7 == 0 { // by turns slow, so that answers wait behind the queue
			for range 50 {
				runtime.Gosched()
			}
		}
		handled[p.N].Add(1)
		return nil, nil
	})
	agentConn := acprpc.NewConn(context.Background(), agentT, agent, nil)
	clientConn := acprpc.NewConn(context.Background(), clientT, client, nil)

	var wg sync.WaitGroup
	var answered, gaveUp atomic.Int32
	for w := range callers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range calls {
				p := notesParams{N: w*calls + i, Count: rng.IntN(maxNotes + 1)}
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(5) == 0 { // give up at a random moment, maybe while the answer waits
					spins := rng.IntN(200)
					go func() {
						for range spins {
							runtime.Gosched()
						}
						cancel()
					}()
				}
				var res notesParams
				err := clientConn.Call(ctx, "x/notes", p, &res)
				cancel()
				if err != nil {
					assert.ErrorIs(t, err, acprpc.ErrCancelled, "request %d", p.N)
					gaveUp.Add(1)
					continue
				}
				answered.Add(1)
				assert.Equal(t, p, res)
				assert.Equal(t, int32(p.Count), handled[p.N].Load(), "request %d: its answer overtook its notifications", p.N)
			}
		})
	}
	wg.Wait()
	t.Logf("%d answered, %d given up", answered.Load(), gaveUp.Load())
	assert.Positive(t, answered.Load())
	require.NoError(t, clientConn.Close())
	require.NoError(t, agentConn.Close())
}
