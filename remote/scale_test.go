package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// TestScaleWebSocket opens many WebSocket connections to one server, each
// with an agent Conn, starts a prompt turn on every one, then cancels them
// all at once with $/cancel_request: every cancel must reach its handler,
// every turn must end with its marker. The clients run in a process of
// their own (this test binary, started again), so that what the server's
// process holds per connection can be measured alone: goroutines, and heap
// plus goroutine stacks after a GC, per idle connection and per connection
// with a turn in flight.
//
// CI runs 200 connections; ACPRPC_SCALE_CONNS=10000 is the run in
// docs/transports.md. The socket buffers are the kernel's and not counted.
func TestScaleWebSocket(t *testing.T) {
	n := 200
	if s := os.Getenv("ACPRPC_SCALE_CONNS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	raiseFileLimit(t)

	var started, cancelled atomic.Int64
	allStarted, allCancelled := make(chan struct{}), make(chan struct{})
	prompt := func(ctx context.Context, req *acprpc.Request) (any, error) {
		if started.Add(1) == int64(n) {
			close(allStarted)
		}
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), acprpc.ErrPeerCancelled) && cancelled.Add(1) == int64(n) {
			close(allCancelled)
		}
		return nil, context.Cause(ctx)
	}
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method == "initialize" {
			return map[string]int{"protocolVersion": 1}, nil
		}
		return prompt(ctx, req)
	})
	var mu sync.Mutex
	var conns []*acprpc.Conn
	srv := NewServer(func(tr acprpc.Transport, r *http.Request) {
		c := acprpc.NewConn(context.Background(), tr, h, nil)
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}, &Options{MaxConnections: n})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		require.NoError(t, srv.Close())
		<-served
		for _, c := range conns {
			_ = c.Close()
		}
	}()

	base := measure()
	child := startScaleClient(t, "ws://"+l.Addr().String()+DefaultPath, n)
	defer child.wait(t)
	opened := time.Now()
	child.expect(t, "connected")
	connectTime := time.Since(opened)
	idle := measure()
	if path := os.Getenv("ACPRPC_SCALE_HEAPPROFILE"); path != "" {
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, pprof.Lookup("heap").WriteTo(f, 0))
		require.NoError(t, f.Close())
	}

	child.say(t, "prompt")
	<-allStarted
	busy := measure()

	cancelAt := time.Now()
	child.say(t, "cancel")
	<-allCancelled
	delivered := time.Since(cancelAt)
	fields := strings.Fields(child.expect(t, "done"))
	ended := time.Since(cancelAt)
	require.Len(t, fields, 3, "done CANCELLED FAILED")
	assert.Equal(t, strconv.Itoa(n), fields[1], "every turn ended with stopReason cancelled")
	assert.Equal(t, "0", fields[2], "no call failed")
	assert.Equal(t, int64(n), cancelled.Load(), "every $/cancel_request reached its handler")
	child.say(t, "close")

	perIdle, perBusy := idle.per(base, n), busy.per(base, n)
	t.Logf("%d WebSocket connections: connected in %v; all %d cancels delivered in %v, every turn ended (answer read) in %v",
		n, connectTime.Round(time.Millisecond), n, delivered.Round(time.Millisecond), ended.Round(time.Millisecond))
	t.Logf("per idle connection:      %.2f goroutines, %.1f KiB (heap %.1f + stacks %.1f)", perIdle.goroutines, perIdle.kib(), perIdle.heapKiB, perIdle.stackKiB)
	t.Logf("per connection with a turn: %.2f goroutines, %.1f KiB (heap %.1f + stacks %.1f)", perBusy.goroutines, perBusy.kib(), perBusy.heapKiB, perBusy.stackKiB)
	// The Conn's read loop, writer and notification goroutine, and the
	// handler goroutine it keeps for the next request; the transport adds none.
	assert.LessOrEqual(t, perIdle.goroutines, 4.05, "an idle connection costs its Conn's goroutines and no more")
	assert.Less(t, perIdle.kib(), 64.0)
}

// BenchmarkIdleWebSocket is what an idle WebSocket connection costs its
// server: 1,000 connections (ACPRPC_SCALE_CONNS sets another number), each
// an agent Conn that has answered initialize, opened from a client process
// of their own (as TestScaleWebSocket does), measured once the server's
// goroutine count has been still for a second and a half (a handler
// goroutine leaves a second after its last request). It reports
// goroutines and bytes (live heap and goroutine stacks, after a GC) per
// connection.
func BenchmarkIdleWebSocket(b *testing.B) {
	n := 1000
	if s := os.Getenv("ACPRPC_SCALE_CONNS"); s != "" { // 10000 is the run of docs/benchmarks.md
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(b, err)
	}
	raiseFileLimit(b)
	var goroutines, heap, stack float64
	for range b.N {
		p := idleWebSocketFootprint(b, n)
		goroutines, heap, stack = goroutines+p.goroutines, heap+p.heapKiB*1024, stack+p.stackKiB*1024
	}
	per := func(total float64) float64 { return total / float64(b.N) }
	b.ReportMetric(per(goroutines), "goroutines/conn")
	b.ReportMetric(per(heap+stack), "B/conn")
	b.ReportMetric(per(heap), "heapB/conn")
	b.ReportMetric(per(stack), "stackB/conn")
}

// idleWebSocketFootprint serves n WebSocket connections from a client
// process until they are idle, and returns what each holds.
func idleWebSocketFootprint(b *testing.B, n int) perConn {
	init := acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) {
		return map[string]int{"protocolVersion": 1}, nil
	})
	var mu sync.Mutex
	var conns []*acprpc.Conn
	srv := NewServer(func(tr acprpc.Transport, r *http.Request) {
		mu.Lock()
		conns = append(conns, acprpc.NewConn(context.Background(), tr, init, nil))
		mu.Unlock()
	}, &Options{MaxConnections: n})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	base := measure()
	child := startScaleClient(b, "ws://"+l.Addr().String()+DefaultPath, n)
	child.expect(b, "connected")
	awaitStillGoroutines()
	idle := measure().per(base, n)
	child.say(b, "close")
	child.wait(b)
	require.NoError(b, srv.Close())
	<-served
	for _, c := range conns {
		_ = c.Close()
	}
	return idle
}

// awaitStillGoroutines returns once the number of goroutines has not
// changed for 1.5 s, or after 30 s.
func awaitStillGoroutines() {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(30 * time.Second)
	last, still := runtime.NumGoroutine(), time.Now()
	for now := range tick.C {
		if g := runtime.NumGoroutine(); g != last {
			last, still = g, now
		}
		if now.Sub(still) >= 1500*time.Millisecond || now.After(deadline) {
			return
		}
	}
}

// footprint is what the process holds: goroutines, live heap and stacks.
type footprint struct {
	goroutines        int
	heapBytes, stacks uint64
}

func measure() footprint {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return footprint{goroutines: runtime.NumGoroutine(), heapBytes: ms.HeapAlloc, stacks: ms.StackInuse}
}

type perConn struct{ goroutines, heapKiB, stackKiB float64 }

func (p perConn) kib() float64 { return p.heapKiB + p.stackKiB }

func (f footprint) per(base footprint, n int) perConn {
	d := func(a, b uint64) float64 { return (float64(a) - float64(b)) / 1024 / float64(n) }
	return perConn{
		goroutines: float64(f.goroutines-base.goroutines) / float64(n),
		heapKiB:    d(f.heapBytes, base.heapBytes),
		stackKiB:   d(f.stacks, base.stacks),
	}
}

// scaleClientEnv, set to the server's URL, makes the test binary the
// clients' process (see TestMain).
const scaleClientEnv = "ACPRPC_SCALE_CLIENT_URL"

type scaleChild struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	waits sync.Once
}

func startScaleClient(t testing.TB, url string, n int) *scaleChild {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), scaleClientEnv+"="+url, "ACPRPC_SCALE_CONNS="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	return &scaleChild{cmd: cmd, in: in, out: bufio.NewReader(out)}
}

func (c *scaleChild) say(t testing.TB, line string) {
	t.Helper()
	_, err := io.WriteString(c.in, line+"\n")
	require.NoError(t, err)
}

// expect reads the client's next line, which must start with word.
func (c *scaleChild) expect(t testing.TB, word string) string {
	t.Helper()
	line, err := c.out.ReadString('\n')
	require.NoError(t, err, "the client process ended early")
	require.True(t, strings.HasPrefix(line, word), "want %q, got %q", word, line)
	return strings.TrimSpace(line)
}

func (c *scaleChild) wait(t testing.TB) {
	c.waits.Do(func() {
		_ = c.in.Close()
		assert.NoError(t, c.cmd.Wait(), "the client process exits with status 0")
	})
}

// scaleClient is the clients' process: it opens ACPRPC_SCALE_CONNS
// connections to url, each a Conn that has called initialize, then, told by
// lines on stdin, starts a prompt on each, cancels them all, and closes.
func scaleClient(url string) int {
	n, _ := strconv.Atoi(os.Getenv("ACPRPC_SCALE_CONNS"))
	raiseFileLimit(nil)
	conns := make([]*acprpc.Conn, n)
	var failed atomic.Int64
	var wg sync.WaitGroup
	slots := make(chan struct{}, 64) // dial at most this many at once: the listen backlog is finite
	for i := range conns {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			tr, err := Dial(context.Background(), url, nil)
			if err != nil {
				fmt.Fprintln(os.Stderr, "scale client:", err)
				failed.Add(1)
				return
			}
			conns[i] = acprpc.NewConn(context.Background(), tr, nil, nil)
			if err := conns[i].Call(context.Background(), "initialize", map[string]int{"protocolVersion": 1}, nil); err != nil {
				fmt.Fprintln(os.Stderr, "scale client:", err)
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		return 1
	}
	stdin := bufio.NewScanner(os.Stdin)
	fmt.Println("connected")

	if !stdin.Scan() || stdin.Text() == "close" { // no prompt: close them idle
		for _, c := range conns {
			_ = c.Close()
		}
		return 0
	}
	cancels := make([]context.CancelFunc, n)
	var ended, errs atomic.Int64
	for i, c := range conns {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[i] = cancel
		wg.Go(func() {
			var res struct {
				StopReason string `json:"stopReason"`
			}
			err := c.Call(ctx, "session/prompt", map[string]any{"sessionId": "s" + strconv.Itoa(i), "prompt": []any{}}, &res,
				acprpc.WaitAfterCancel(time.Minute), acprpc.CancelRequestOnly()) // each turn's cancel is its $/cancel_request
			switch {
			case err == nil && res.StopReason == "cancelled":
				ended.Add(1)
			case err != nil:
				errs.Add(1)
				fmt.Fprintln(os.Stderr, "scale client:", err)
			}
		})
	}

	stdin.Scan() // cancel
	for _, cancel := range cancels {
		cancel()
	}
	wg.Wait()
	fmt.Println("done", ended.Load(), errs.Load())

	stdin.Scan() // close, or the end of input
	for _, c := range conns {
		_ = c.Close()
	}
	return 0
}
