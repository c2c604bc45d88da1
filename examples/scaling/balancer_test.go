package scaling

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/examples/internal/demo"
	"github.com/acpkit/acprpc/remote"
)

// The load: this many editors over each transport, connecting this many at
// a time.
const (
	editorsPerKind = 150
	connectAtOnce  = 16
	lateEditors    = 10 // per transport, connecting while a replica drains
	figureRounds   = 2  // of every editor's turn at once, straight and through the balancer
)

// promptly bounds how long a killed replica's editors may take to see their
// connections end.
const promptly = 5 * time.Second

// Three replicas behind HAProxy (haproxy.cfg, docs/scaling.md), 300 editors
// over WebSocket and Streamable HTTP:
//
//   - every turn, cancelled mid-flight, is answered cancelled, through the
//     balancer as straight to the replicas (the figures are logged);
//   - SIGTERM to one replica with a turn in flight on every editor drains
//     it: a new connection straight to it is refused with 503, new
//     connections through the balancer all reach the other two, and its
//     editors' turns are answered cancelled before their connections end
//     and it exits with status 0;
//   - SIGKILL to another: its editors see their connections end within
//     promptly, their turns failing rather than hanging, and the last
//     replica's turns, untouched, are then cancelled and answered.
func TestReplicasBehindHAProxy(t *testing.T) {
	replicas := []*replica{startReplica(t, "replica1"), startReplica(t, "replica2"), startReplica(t, "replica3")}
	lb := startBalancer(t, replicas...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := &http.Transport{MaxIdleConnsPerHost: 2 * editorsPerKind}
	defer base.CloseIdleConnections()

	direct := connectAll(ctx, t, base, editorsPerKind, func(i int) string { return replicas[i%len(replicas)].url })
	editors := connectAll(ctx, t, base, editorsPerKind, func(int) string { return lb.url })
	byReplica := groupByReplica(editors)
	require.Len(t, byReplica, len(replicas), "the balancer spreads the editors over every replica")
	for round := range figureRounds { // alternating, so that a burst of load elsewhere does not favour one
		t.Logf("round %d: %d cancelled turns at once, straight to the replicas: %s", round, len(direct), cancelEvery(ctx, t, direct))
		t.Logf("round %d: %d cancelled turns at once, through HAProxy:          %s", round, len(editors), cancelEvery(ctx, t, editors))
	}
	for _, kind := range []string{"ws", "http"} {
		t.Logf("one %s turn after another, cancelled mid-flight: %v straight, %v through HAProxy (medians of %d)", kind,
			oneByOne(ctx, t, direct[:2], kind).Round(10*time.Microsecond), oneByOne(ctx, t, editors, kind).Round(10*time.Microsecond), sequentialTurns)
	}
	closeAll(direct)

	turns := startEvery(ctx, t, editors)
	draining, killed, last := replicas[0], replicas[1], replicas[2]
	late := drain(ctx, t, base, lb, draining, byReplica[draining.name], turns)
	editors = append(editors, late...)
	byReplica = groupByReplica(editors)
	for _, e := range late {
		turns[e] = startEvery(ctx, t, []*editor{e})[e]
	}

	kill(ctx, t, killed, byReplica[killed.name], turns)
	for _, e := range byReplica[last.name] {
		_, end, err := turns[e].cancel(ctx)
		require.NoError(t, err)
		require.NoError(t, end.err, "a turn on a replica that was not touched")
		assert.Equal(t, demo.StopCancelled, end.stopReason)
	}
	closeAll(editors)
}

// connectAll connects perKind editors over each transport, to url(i) for
// the i-th.
func connectAll(ctx context.Context, t *testing.T, base http.RoundTripper, perKind int, url func(i int) string) []*editor {
	t.Helper()
	editors := make([]*editor, 2*perKind)
	errs := make([]error, len(editors))
	slots := make(chan struct{}, connectAtOnce)
	var wg sync.WaitGroup
	for i := range editors {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			editors[i], errs[i] = connect(ctx, base, url(i), []string{"ws", "http"}[i%2])
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			closeAll(editors)
			require.NoError(t, err, "editor %d", i)
		}
	}
	return editors
}

func closeAll(editors []*editor) {
	for _, e := range editors {
		if e != nil {
			e.conn.Close()
		}
	}
}

func groupByReplica(editors []*editor) map[string][]*editor {
	out := make(map[string][]*editor)
	for _, e := range editors {
		out[e.replica] = append(out[e.replica], e)
	}
	return out
}

// figures are how a round of cancelled turns went.
type figures struct {
	wall           time.Duration
	turns          int
	p50, p99, pmax time.Duration // from session/cancel to the cancelled answer
}

func (f figures) String() string {
	return fmt.Sprintf("%.0f turns/s (all %d in %v); cancel answered p50 %v, p99 %v, max %v",
		float64(f.turns)/f.wall.Seconds(), f.turns, f.wall.Round(time.Millisecond),
		f.p50.Round(100*time.Microsecond), f.p99.Round(100*time.Microsecond), f.pmax.Round(100*time.Microsecond))
}

// cancelEvery runs one turn on every editor at once, cancels each as soon
// as it is mid-flight, and checks that every one is answered cancelled.
func cancelEvery(ctx context.Context, t *testing.T, editors []*editor) figures {
	t.Helper()
	start := time.Now()
	latencies := make([]time.Duration, len(editors))
	errs := make([]error, len(editors))
	var wg sync.WaitGroup
	for i, e := range editors {
		wg.Go(func() {
			tu := e.start(ctx)
			if errs[i] = tu.working(ctx); errs[i] != nil {
				return
			}
			var end turnEnd
			latencies[i], end, errs[i] = tu.cancel(ctx)
			if errs[i] == nil && end.err != nil {
				errs[i] = end.err
			} else if errs[i] == nil && end.stopReason != demo.StopCancelled {
				errs[i] = fmt.Errorf("stopReason %q", end.stopReason)
			}
		})
	}
	wg.Wait()
	f := figures{wall: time.Since(start), turns: len(editors)}
	for i, err := range errs {
		require.NoError(t, err, "the turn of editor %d (%s)", i, editors[i].kind)
	}
	slices.Sort(latencies)
	f.p50, f.p99, f.pmax = latencies[len(latencies)/2], latencies[len(latencies)*99/100], latencies[len(latencies)-1]
	return f
}

// sequentialTurns is how many turns oneByOne runs.
const sequentialTurns = 20

// oneByOne runs sequentialTurns turns, one after another, on the first
// editor of kind, each cancelled once mid-flight, and returns the median
// time from the prompt to its cancelled answer: the latency a user sees,
// which a proxy holding events back shows at once.
func oneByOne(ctx context.Context, t *testing.T, editors []*editor, kind string) time.Duration {
	t.Helper()
	i := slices.IndexFunc(editors, func(e *editor) bool { return e.kind == kind })
	require.GreaterOrEqual(t, i, 0)
	took := make([]time.Duration, sequentialTurns)
	for n := range took {
		start := time.Now()
		tu := editors[i].start(ctx)
		require.NoError(t, tu.working(ctx))
		_, end, err := tu.cancel(ctx)
		require.NoError(t, err)
		require.NoError(t, end.err)
		require.Equal(t, demo.StopCancelled, end.stopReason)
		took[n] = end.at.Sub(start)
	}
	slices.Sort(took)
	return took[len(took)/2]
}

// startEvery starts a turn on every editor and waits until each is
// mid-flight.
func startEvery(ctx context.Context, t *testing.T, editors []*editor) map[*editor]*turn {
	t.Helper()
	turns := make(map[*editor]*turn, len(editors))
	for _, e := range editors {
		turns[e] = e.start(ctx)
	}
	for _, e := range editors {
		require.NoError(t, turns[e].working(ctx))
	}
	return turns
}

// drain sends r SIGTERM while each of its editors has a turn in flight,
// holding their confirmations of the cancelled requests (the agent waits
// for them) while it checks that r refuses new connections and that new
// editors through the balancer all reach the other replicas. Then every
// turn of r is answered cancelled, its connections end, and r exits with
// status 0. It returns the new editors.
func drain(ctx context.Context, t *testing.T, base http.RoundTripper, lb *balancer, r *replica, on []*editor, turns map[*editor]*turn) []*editor {
	t.Helper()
	release := make(chan struct{})
	for _, e := range on {
		e.holdConfirmations(release)
	}
	start := time.Now()
	require.NoError(t, r.proc.Signal(syscall.SIGTERM))
	select {
	case <-turns[on[0]].cancelled: // the drain has begun
	case <-ctx.Done():
		t.Fatal("the replica did not cancel its turns")
	}
	_, err := remote.Dial(ctx, "ws"+strings.TrimPrefix(r.url, "http"), nil)
	assert.ErrorContains(t, err, "503", "a new WebSocket connection straight to the draining replica")
	resp, err := http.Post(r.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a new Streamable HTTP connection straight to the draining replica")

	late := connectAll(ctx, t, base, lateEditors, func(int) string { return lb.url })
	for _, e := range late {
		assert.NotEqual(t, r.name, e.replica, "a new connection reached the draining replica")
	}
	close(release)
	for _, e := range on {
		end, err := turns[e].end(ctx)
		require.NoError(t, err)
		require.NoError(t, end.err, "a turn on the draining replica")
		assert.Equal(t, demo.StopCancelled, end.stopReason)
		select {
		case <-e.closed():
		case <-ctx.Done():
			t.Fatal("a drained connection did not end")
		}
	}
	<-r.done
	require.NoError(t, r.err, "the drained replica exits with status 0")
	t.Logf("SIGTERM: %s drained %d turns and exited in %v; %d new editors reached the others", r.name, len(on),
		time.Since(start).Round(time.Millisecond), len(late))
	return late
}

// kill ends r at once while each of its editors has a turn in flight: each
// sees its connection end within promptly, and its turn fail.
func kill(ctx context.Context, t *testing.T, r *replica, on []*editor, turns map[*editor]*turn) {
	t.Helper()
	ended := make([]time.Duration, len(on)) // after the kill; 0 if never
	killedAt := time.Now()
	r.proc.Kill()
	var wg sync.WaitGroup
	for i, e := range on {
		wg.Go(func() {
			select {
			case <-e.closed():
				ended[i] = time.Since(killedAt)
			case <-time.After(promptly):
			}
		})
	}
	wg.Wait()
	byKind := map[string][]time.Duration{}
	for i, e := range on {
		require.NotZero(t, ended[i], "an editor of the killed replica (%s) still had its connection %v after the kill", e.kind, promptly)
		byKind[e.kind] = append(byKind[e.kind], ended[i])
		end, err := turns[e].end(ctx)
		require.NoError(t, err)
		assert.Error(t, end.err, "a turn on the killed replica cannot be answered (%s, %+v)", e.kind, end)
	}
	<-r.done
	spread := func(d []time.Duration) string {
		slices.Sort(d)
		return fmt.Sprintf("median %v, all within %v", d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
	t.Logf("SIGKILL: the %d editors of %s saw their connections end: WebSocket %s; Streamable HTTP %s",
		len(on), r.name, spread(byKind["ws"]), spread(byKind["http"]))
}
