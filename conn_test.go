package acprpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Fault tests: the peer dies at every point of the cascade, input ends in
// the middle of a line, the peer stops reading, the writer fails, the parent
// context ends, and Close races everything else. After each, every handler's
// context ended with the right cause, every pending call returned an error
// matching ErrConnClosed, no answer went out twice, and no goroutine is left.

// The cascade of a cancelled call, as the agent's handler plays it: a turn
// sends a notification, then calls the client twice with its own context;
// the client's $/cancel_request cancels the turn, which cancels both calls.
// The client answers one call with an error and the other with a result.
const (
	cascadeTurn   = `{"jsonrpc":"2.0","id":1,"method":"x/turn","params":{"text":"hi"}}`
	cascadeResult = `{"outcome":"cancelled"}`
)

// cascadeAgent is the agent's handler. The errors of its two calls are
// recorded by method.
type cascadeAgent struct {
	rec   wiretest.Recorder
	mu    sync.Mutex
	calls map[string]error
}

func (a *cascadeAgent) turn(ctx context.Context, req *acprpc.Request) (any, error) {
	if req.IsNotification() {
		return nil, nil
	}
	if req.Method != "x/turn" {
		return nil, acprpc.MethodNotFound(req.Method)
	}
	conn := acprpc.ConnFromContext(ctx)
	_ = conn.Notify(ctx, "x/note", map[string]string{"text": "working"})
	var wg sync.WaitGroup
	for _, m := range []string{"x/tool", "x/ask"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out json.RawMessage
			err := conn.Call(ctx, m, nil, &out)
			a.mu.Lock()
			a.calls[m] = err
			a.mu.Unlock()
		}()
	}
	wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, err := range a.calls {
		if err != nil {
			return nil, err
		}
	}
	return map[string]string{"outcome": "done"}, nil
}

// cascade is the client's side of the cascade, step by step.
type cascade struct {
	ctx       context.Context
	p         *wiretest.Peer
	wrote     *wiretest.Ledger  // what the agent's Conn wrote
	idOf      map[string]string // method → the agent's request ID
	delivered map[string]bool   // the steps the client sent whole
	read      int               // the agent's lines the client has read
}

func (c *cascade) script() wiretest.Script {
	return wiretest.Script{
		c.send("x/turn", func() string { return cascadeTurn }),
		c.expect("x/note", func(t *testing.T, m wiretest.Msg) {
			require.Equal(t, "x/note", m.Method)
		}),
		c.expect("agent request 1", c.agentRequest),
		c.expect("agent request 2", c.agentRequest),
		c.send("$/cancel_request of the turn", func() string { return wiretest.CancelLine("1") }),
		c.expect("$/cancel_request 1", isCancelRequest),
		c.expect("$/cancel_request 2", isCancelRequest),
		c.send("answer to x/tool", func() string {
			return `{"jsonrpc":"2.0","id":` + c.idOf["x/tool"] + `,"error":{"code":-32800,"message":"Request cancelled"}}`
		}),
		c.send("answer to x/ask", func() string {
			return `{"jsonrpc":"2.0","id":` + c.idOf["x/ask"] + `,"result":` + cascadeResult + `}`
		}),
		c.expect("turn answer", func(t *testing.T, m wiretest.Msg) {
			require.Equal(t, "1", string(m.ID))
			require.Equal(t, int64(-32800), m.Code(), "the cancelled turn answers as cancelled: %s", m)
		}),
	}
}

// send is a step in which the client sends a line; cut, it sends half.
func (c *cascade) send(name string, line func() string) wiretest.Step {
	return wiretest.Step{
		Name: name,
		Do: func(t *testing.T) {
			c.p.Send(line())
			c.delivered[name] = true
		},
		Cut: func(t *testing.T) {
			l := line()
			c.p.SendRaw(l[:len(l)/2])
		},
	}
}

// expect is a step in which the client reads the agent's next line; cut,
// the client dies while the agent is writing it.
func (c *cascade) expect(name string, check func(*testing.T, wiretest.Msg)) wiretest.Step {
	return wiretest.Step{
		Name: name,
		Do: func(t *testing.T) {
			c.read++
			check(t, c.p.Expect(c.ctx))
		},
		Cut: func(t *testing.T) {
			n := c.read + 1
			require.NoError(t, c.wrote.Await(c.ctx, func() bool { return c.wrote.Tally(wiretest.AtoB).Lines >= n }))
		},
	}
}

func (c *cascade) agentRequest(t *testing.T, m wiretest.Msg) {
	require.True(t, m.IsRequest(), "expected a request, got %s", m)
	c.idOf[m.Method] = string(m.ID)
}

func isCancelRequest(t *testing.T, m wiretest.Msg) {
	require.Equal(t, acprpc.MethodCancelRequest, m.Method)
}

// TestFaultsPeerDiesInCascade kills the raw client after each message of the
// cascade, and in the middle of each, and checks what the agent's Conn did.
func TestFaultsPeerDiesInCascade(t *testing.T) {
	steps := len(new(cascade).script())
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		for k := 0; k <= steps; k++ {
			t.Run(fmt.Sprintf("after_%d", k), func(t *testing.T) { runCascade(t, tr, k, false) })
		}
		for k := 1; k <= steps; k++ {
			t.Run(fmt.Sprintf("inside_%d", k), func(t *testing.T) { runCascade(t, tr, k, true) })
		}
	})
}

// runCascade plays the cascade as the client and kills the peer after k
// messages, or, with cut set, halfway through message k.
func runCascade(t *testing.T, tr wiretest.Transport, k int, cut bool) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	agent := &cascadeAgent{calls: map[string]error{}}
	c, p := wiretest.Connect(t, tr, agent.rec.Track(agent.turn),
		&acprpc.Options{WaitAfterCancel: time.Minute, CancelGrace: -1}, wiretest.With{Tapped: true})
	tap := p.Tap()
	client := &cascade{ctx: ctx, p: p, wrote: tap.Ledger(), idOf: map[string]string{}, delivered: map[string]bool{}}
	script := client.script()
	if cut {
		script.PlayCut(t, k)
	} else {
		script.Play(t, k)
	}
	p.Close()

	wiretest.Recv(t, ctx, c.Done()) // the Conn to close
	require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
	p.Settle(ctx)
	agent.mu.Lock()
	defer agent.mu.Unlock()

	delivered := client.delivered
	hctx := agent.rec.Context("1")
	if !delivered["x/turn"] {
		require.Nil(t, hctx, "no turn was sent, yet a handler ran")
	} else {
		require.NotNil(t, hctx, "the turn was delivered but its handler never ran")
		want := acprpc.ErrConnClosed
		if delivered["$/cancel_request of the turn"] {
			want = acprpc.ErrPeerCancelled
		}
		// A handler still running when the connection closed sees its
		// cause. One whose calls failed on the broken output before the
		// close had cancelled anything has returned with its context
		// live, which then ends as answered; its calls' errors are
		// checked below.
		if cause, _ := agent.rec.Returned("1"); cause != nil {
			require.ErrorIs(t, context.Cause(hctx), want)
		}
		for method, err := range agent.calls {
			if delivered["answer to "+method] {
				if method == "x/tool" {
					require.ErrorIs(t, err, acprpc.ErrCancelled)
				} else {
					require.NoError(t, err, "the marker is a result")
				}
				continue
			}
			require.Error(t, err, method)
			if tap.Ledger().Tally(wiretest.AtoB).Requests[method] > 0 {
				require.ErrorIs(t, err, acprpc.ErrConnClosed, "%s was pending when the peer died", method)
			} else {
				// Never sent: the connection was already closing.
				require.True(t, errors.Is(err, acprpc.ErrConnClosed) || errors.Is(err, context.Canceled), "%s: %v", method, err)
			}
		}
	}
	tap.Ledger().CheckNoDuplicates(t)
	if k == len(script) && !cut {
		require.Equal(t, 1, tap.Ledger().Answered(wiretest.BtoA, "1"), "the turn's answer")
	}
}

// TestFaultsHandlerCallPendingWhenPeerDies: a handler's call to the peer,
// made with the handler's own context as ACP agents do, is pending when the
// peer dies. The handler's context and the call both end; the call's error
// must say the connection closed, not that someone cancelled it.
func TestFaultsHandlerCallPendingWhenPeerDies(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		wiretest.NoLeak(t)
		ctx := wiretest.Context(t)
		for range rounds {
			callErr := make(chan error, 1)
			h := acprpc.HandlerFunc(func(hctx context.Context, req *acprpc.Request) (any, error) {
				err := acprpc.ConnFromContext(hctx).Call(hctx, "x/read", map[string]string{"path": "a"}, nil)
				callErr <- err
				return nil, err
			})
			c, p := wiretest.Connect(t, tr, h, nil)
			p.Send(cascadeTurn)
			p.ExpectRequest(ctx, "x/read")
			p.Close()
			err := wiretest.Recv(t, ctx, callErr)
			require.ErrorIs(t, err, acprpc.ErrConnClosed)
			require.NotErrorIs(t, err, acprpc.ErrCancelled)
			require.NoError(t, c.Close())
		}
	})
}

// TestFaultsPartialLineThenEOF ends the Conn's input in the middle of a line,
// with a call and a handler pending, while the peer still reads.
func TestFaultsPartialLineThenEOF(t *testing.T) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	var rec wiretest.Recorder
	c, p := wiretest.Connect(t, wiretest.Transports[0], acprpc.HandlerFunc(rec.Block), nil, wiretest.With{Tapped: true})
	tap := p.Tap()

	p.Request(`"long"`, "block", "")
	rec.NextStart(t, ctx)
	callErr := make(chan error, 1)
	go func() {
		callErr <- c.Call(context.Background(), "x/read", map[string]string{"path": "x"}, nil)
	}()
	p.ExpectRequest(ctx, "x/read")

	p.SendRaw(`{"jsonrpc":"2.0","id":9,"method":"ec`)
	p.CloseWrite()

	// The broken line is answered -32700; the blocked request, read before
	// the end, is answered -32800 once InputEndGrace has passed, its
	// handler's context ending with ErrConnClosed.
	rest := p.Rest(ctx)
	require.Len(t, rest, 2)
	require.Equal(t, "null", string(rest[0].ID))
	require.EqualValues(t, acprpc.CodeParseError, rest[0].Code())
	require.Equal(t, `"long"`, string(rest[1].ID), "unexpected line %s", rest[1])
	require.EqualValues(t, acprpc.CodeRequestCancelled, rest[1].Code())

	wiretest.Recv(t, ctx, c.Done()) // the Conn to close
	require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
	require.ErrorIs(t, c.Err(), io.EOF)
	require.ErrorIs(t, wiretest.Recv(t, ctx, callErr), acprpc.ErrConnClosed)
	p.Settle(ctx)
	require.ErrorIs(t, context.Cause(rec.Context(`"long"`)), acprpc.ErrConnClosed)
	tap.Ledger().CheckNoDuplicates(t)
	require.NoError(t, c.Close())
}

// TestFaultsLastLineWithoutNewline: a complete message cut off from its "\n"
// by the end of input is still a message, read before the end: it is
// answered exactly once, with its result.
func TestFaultsLastLineWithoutNewline(t *testing.T) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"echo": wiretest.Ping}, nil, wiretest.With{Tapped: true})
	tap := p.Tap()
	p.SendRaw(wiretest.RequestLine("3", "echo", ""))
	p.CloseWrite()
	rest := p.Rest(ctx)
	require.Len(t, rest, 1)
	require.Equal(t, "3", string(rest[0].ID))
	require.JSONEq(t, `"pong"`, string(rest[0].Result))
	wiretest.Recv(t, ctx, c.Done()) // the Conn to close
	tap.Ledger().CheckNoDuplicates(t)
	require.NoError(t, c.Close())
}

// TestFaultsPeerStopsReading: the peer floods requests and never reads, so
// the kernel's pipe buffers and the write queue fill and the writer blocks.
// A caller's cancel still returns at once (its $/cancel_request only
// queued), Notify too, and Close returns, ending everything.
func TestFaultsPeerStopsReading(t *testing.T) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	var rec wiretest.Recorder
	h := wiretest.Mux{"block": rec.Block, "echo": wiretest.Echo}
	c, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{MaxQueuedWrite: 64 << 10}, wiretest.With{Tapped: true})
	tap := p.Tap()
	p.Request(`"b"`, "block", "")
	rec.NextStart(t, ctx)

	// Two calls of our own, pending; the peer will never answer them.
	callCtx, cancelCall := context.WithCancel(context.Background())
	defer cancelCall()
	cancelledErr, closedErr := goCall(c, callCtx, "slow", nil, nil), goCall(c, context.Background(), "slow", nil, nil)
	p.ExpectRequest(ctx, "slow")
	p.ExpectRequest(ctx, "slow")
	capacity := wiretest.Transports[0].Capacity(t)
	// Half the pipe: a pipe wastes the tails of its pages on small writes,
	// so the writer can block before it has asked for the full capacity,
	// and a higher mark might never be reached.
	writeBlocked := tap.Past(tap.Attempted() + int64(capacity)/2)

	// Flood: the Conn writes far more than any pipe buffer holds, and the
	// peer reads nothing.
	flooder := make(chan struct{})
	go func() {
		defer close(flooder)
		pad := strings.Repeat("x", 1000)
		for i := 0; ; i++ {
			if p.TrySend(wiretest.RequestLine(fmt.Sprint(i), "echo", `{"pad":"`+pad+`"}`)+"\n") != nil {
				return // the Conn closed its input
			}
		}
	}()
	// Once the Conn has written half the pipe and the flood goes on with the
	// peer reading nothing, the writer is about to block for good.
	wiretest.Recv(t, ctx, writeBlocked) // the writer to block

	cancelCall()
	err := wiretest.Recv(t, ctx, cancelledErr)
	require.ErrorIs(t, err, acprpc.ErrCancelled, "a cancelled Call blocked behind a stuck writer")
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, c.Notify(ctx, "x/note", map[string]int{"n": 1}))
	require.GreaterOrEqual(t, c.Stats().CancelsSent, uint64(1))

	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	wiretest.Recv(t, ctx, closed)  // Close to return
	wiretest.Recv(t, ctx, flooder) // the flooding peer to be cut off
	require.ErrorIs(t, wiretest.Recv(t, ctx, closedErr), acprpc.ErrConnClosed, "a pending call on Close")
	p.Settle(ctx)
	require.ErrorIs(t, context.Cause(rec.Context(`"b"`)), acprpc.ErrConnClosed)
	tap.Ledger().CheckNoDuplicates(t)
}

// TestFaultsWriteFails: the output fails after n bytes, for several n, with
// calls pending, handlers running and answers going out.
func TestFaultsWriteFails(t *testing.T) {
	for _, n := range []int{0, 1, 60, 500, 4000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			wiretest.NoLeak(t)
			ctx := wiretest.Context(t)
			var rec wiretest.Recorder
			h := wiretest.Mux{"block": rec.Block, "echo": wiretest.Echo}
			failing := wiretest.BreakingAfter(n)
			c, p := wiretest.Connect(t, failing, h, nil, wiretest.With{Tapped: true})
			tap := p.Tap()
			drained := p.Drain()

			const calls = 20
			errs := make(chan error, calls)
			for i := range calls {
				go func() { errs <- c.Call(context.Background(), "slow", map[string]int{"i": i}, nil) }()
			}
			// The Conn may already have closed its input: writes may fail.
			for i := range 10 {
				_ = p.TrySend(wiretest.RequestLine(fmt.Sprint(i), "block", "") + "\n")
			}
			for i := range 200 {
				if p.TrySend(wiretest.RequestLine(fmt.Sprintf(`"e%d"`, i), "echo", fmt.Sprintf("[%d]", i))+"\n") != nil {
					break
				}
			}
			wiretest.Recv(t, ctx, c.Done()) // the write failure to close the Conn
			require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
			require.ErrorContains(t, c.Err(), "wiretest: output broken")
			for range calls {
				require.ErrorIs(t, wiretest.Recv(t, ctx, errs), acprpc.ErrConnClosed, "a pending call")
			}
			p.Settle(ctx)
			rec.CheckCauses(t, acprpc.ErrConnClosed)
			p.Close()
			wiretest.Recv(t, ctx, drained) // the output to end
			tap.Ledger().CheckNoDuplicates(t)
			require.ErrorIs(t, c.Call(ctx, "late", nil, nil), acprpc.ErrConnClosed)
			require.ErrorIs(t, c.Notify(ctx, "late", nil), acprpc.ErrConnClosed)
		})
	}
}

type parentKey struct{}

// TestFaultsParentContextEnds: the context given to NewConn ends while a
// call and a handler are in flight.
func TestFaultsParentContextEnds(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		wiretest.NoLeak(t)
		ctx := wiretest.Context(t)
		parent, cancelParent := context.WithCancelCause(context.WithValue(context.Background(), parentKey{}, "v"))
		defer cancelParent(nil)
		var rec wiretest.Recorder
		var sawValue atomic.Bool
		h := rec.Track(func(ctx context.Context, req *acprpc.Request) (any, error) {
			sawValue.Store(ctx.Value(parentKey{}) == "v")
			return wiretest.Hold(nil)(ctx, req)
		})
		c, p := wiretest.Connect(t, tr, h, nil, wiretest.With{Parent: parent, Tapped: true})
		tap := p.Tap()
		p.Request("1", "block", "")
		rec.NextStart(t, ctx)
		callErr := goCall(c, context.Background(), "slow", nil, nil)
		p.ExpectRequest(ctx, "slow")

		gone := errors.New("the editor quit")
		cancelParent(gone)
		wiretest.Recv(t, ctx, c.Done()) // the Conn to close
		require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
		require.ErrorIs(t, c.Err(), gone)
		require.ErrorIs(t, wiretest.Recv(t, ctx, callErr), acprpc.ErrConnClosed, "the pending call")
		p.Settle(ctx)
		require.True(t, sawValue.Load(), "handlers carry the parent's values")
		require.ErrorIs(t, context.Cause(rec.Context("1")), acprpc.ErrConnClosed)
		require.NoError(t, c.Close())
		for _, m := range p.Rest(ctx) {
			require.True(t, m.IsResponse() && string(m.ID) == "1", "unexpected line %s", m)
		}
		tap.Ledger().CheckNoDuplicates(t)
	})
}

// TestFaultsParentContextAlreadyDone: a connection made with a context that
// has already ended closes at once, cleanly.
func TestFaultsParentContextAlreadyDone(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		wiretest.NoLeak(t)
		ctx := wiretest.Context(t)
		for range 50 {
			parent, cancel := context.WithCancel(context.Background())
			cancel()
			c, p := wiretest.Connect(t, tr, nil, nil, wiretest.With{Parent: parent})
			wiretest.Recv(t, ctx, c.Done()) // the Conn to close
			require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
			require.ErrorIs(t, c.Err(), context.Canceled)
			require.NoError(t, c.Close())
			p.Close()
		}
	})
}

// TestFaultsInputAlreadyEnded: the peer's input has ended before NewConn
// returns.
func TestFaultsInputAlreadyEnded(t *testing.T) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	for range 50 {
		inR, inW, err := os.Pipe()
		require.NoError(t, err)
		require.NoError(t, inW.Close())
		c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(inR, io.Discard), nil, nil)
		wiretest.Recv(t, ctx, c.Done()) // the Conn to close
		require.ErrorIs(t, c.Err(), io.EOF)
		require.NoError(t, c.Close())
	}
}

// TestFaultsCloseRaces closes a connection at a random moment while both
// sides call, notify, cancel requests and poll Stats, over and over.
func TestFaultsCloseRaces(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 6
	}
	for round := range rounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) { closeRace(t, uint64(round)) })
	}
}

func closeRace(t *testing.T, seed uint64) {
	wiretest.NoLeak(t)
	ctx := wiretest.Context(t)
	rng := rand.New(rand.NewPCG(seed, 99))

	// Handlers that are running when the connection closes must see
	// ErrConnClosed, or the cancel that reached them first: the peer's, or
	// this side's CancelRequest of the last request its handler saw.
	var wrongCause atomic.Value
	var lastSeen sync.Map // *acprpc.Conn → the ID of the last request it served
	errCancelledHere := errors.New("cancelled on this side")
	serve := acprpc.HandlerFunc(func(hctx context.Context, req *acprpc.Request) (any, error) {
		if req.IsNotification() {
			return nil, nil
		}
		if req.Method == "echo" {
			return req.Params, nil
		}
		lastSeen.Store(acprpc.ConnFromContext(hctx), req.ID)
		<-hctx.Done()
		cause := context.Cause(hctx)
		if !errors.Is(cause, acprpc.ErrConnClosed) && !errors.Is(cause, errCancelledHere) &&
			!errors.Is(cause, acprpc.ErrPeerCancelled) {
			wrongCause.Store(fmt.Sprintf("%s: %v", req.Method, cause))
		}
		return nil, cause
	})
	w := wiretest.NewWire(t, wiretest.Side{Handler: serve}, wiretest.Side{Handler: serve}, wiretest.With{Tapped: true})
	a, b := w.A, w.B

	var wg sync.WaitGroup
	stop := make(chan struct{})
	// The loops spin once the connection is closed; they stop however the
	// test ends, a failed wait included.
	stopLoops := sync.OnceFunc(func() { close(stop) })
	defer stopLoops()
	var failures sync.Map
	check := func(what string, err error) {
		if err != nil && !errors.Is(err, acprpc.ErrConnClosed) && !errors.Is(err, acprpc.ErrCancelled) {
			failures.Store(what, err)
		}
	}
	loop := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f(i)
			}
		}()
	}
	// Every loop makes a round trip each time, so that none of them floods
	// the pipes: Notify and a cancelled Call only queue their lines.
	for _, conn := range []*acprpc.Conn{a, b} {
		echo := func(i int) { check("echo", conn.Call(ctx, "echo", []int{i}, nil)) }
		loop(echo)
		loop(func(i int) {
			cctx, cancel := context.WithCancel(ctx)
			go cancel()
			check("block", conn.Call(cctx, "block", []int{i}, nil))
			echo(i)
		})
		loop(func(i int) {
			check("hold", conn.Call(ctx, "x/hold", []int{i}, nil))
		})
		loop(func(i int) {
			check("notify", conn.Notify(ctx, "x/note", map[string]int{"i": i}))
			echo(i)
		})
		loop(func(i int) {
			if id, ok := lastSeen.Load(conn); ok {
				conn.CancelRequest(id.(acprpc.ID), errCancelledHere)
			}
			echo(i)
		})
		loop(func(i int) {
			_ = conn.Stats()
			echo(i)
		})
	}

	// Let some traffic through, then close one side at a random moment.
	victim := a
	if rng.IntN(2) == 1 {
		victim = b
	}
	for range rng.IntN(50) {
		require.NoError(t, a.Call(ctx, "echo", []int{0}, nil))
	}
	closed := make(chan struct{})
	go func() { _ = victim.Close(); close(closed) }()
	wiretest.Recv(t, ctx, closed)   // Close to return
	wiretest.Recv(t, ctx, a.Done()) // a to close
	wiretest.Recv(t, ctx, b.Done()) // b to close (its peer's pipes closed)
	stopLoops()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	wiretest.Recv(t, ctx, done) // every operation to return
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())

	failures.Range(func(k, v any) bool {
		assert.Failf(t, "an operation failed for the wrong reason", "%v: %v", k, v)
		return true
	})
	if wc := wrongCause.Load(); wc != nil {
		require.Fail(t, "a handler's context ended with the wrong cause", wc)
	}
	w.Ledger.CheckNoDuplicates(t)
	require.ErrorIs(t, a.Err(), acprpc.ErrConnClosed)
	require.ErrorIs(t, b.Err(), acprpc.ErrConnClosed)
}

// An agent writes its last updates (notifications) and the answer to the
// call they belong to, then exits. Every update read before the end of its output is handled, with a
// context still live, and Call returns the answer only after all of them;
// then the connection closes. The first update's handler waits until the
// client has read the end of input, so the end always overtakes the queue.
func TestFaultsPeerExitsAfterItsLastUpdates(t *testing.T) {
	const updates = 50
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var handled, handledDead atomic.Int32
		tapped := make(chan *wiretest.Tap, 1)
		var inputEnded <-chan struct{}
		update := func(hctx context.Context, _ *acprpc.Request) (any, error) {
			if handled.Load() == 0 {
				inputEnded = (<-tapped).InputEnded()
				<-inputEnded
			}
			if hctx.Err() != nil {
				handledDead.Add(1)
			}
			handled.Add(1)
			return nil, nil
		}
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"x/note": update}, nil, wiretest.With{Tapped: true})
		tap := p.Tap()
		tapped <- tap
		var res struct{ Outcome string }
		var handledAtReturn int32
		done := make(chan error, 1)
		go func() {
			err := c.Call(ctx, "x/work", map[string]int{"n": 1}, &res)
			handledAtReturn = handled.Load()
			done <- err
		}()
		req := p.ExpectRequest(ctx, "x/work")
		var last strings.Builder
		for i := range updates {
			fmt.Fprintf(&last, `{"jsonrpc":"2.0","method":"x/note","params":{"n":%d}}`+"\n", i)
		}
		last.WriteString(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"outcome":"done"}}` + "\n")
		p.SendRaw(last.String())
		p.CloseWrite()

		require.NoError(t, wiretest.Recv(t, ctx, done))
		assert.Equal(t, "done", res.Outcome)
		assert.EqualValues(t, updates, handledAtReturn, "the answer came back before the updates sent ahead of it")
		assert.Zero(t, handledDead.Load(), "updates handled with the connection's context ended")
		wiretest.Recv(t, ctx, c.Done())
		assert.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
		assert.ErrorIs(t, c.Err(), io.EOF)
		assert.EqualValues(t, updates, handled.Load())
	})
}

// closeWithin closes c on another goroutine and fails the test unless Close
// returns within d.
func closeWithin(t *testing.T, c *acprpc.Conn, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-ctx.Done():
		t.Fatalf("Close did not return within %v", d)
	}
}

// shutdownRig is a Conn with work in flight both ways: two requests and a
// notification whose handlers wait for their contexts, and two calls
// waiting for answers.
type shutdownRig struct {
	conn      *acprpc.Conn
	peer      *wiretest.Peer
	handlers  wiretest.Recorder
	callErrs  chan error
	cancelCtx context.CancelCauseFunc
}

func newShutdownRig(t *testing.T, tr wiretest.Transport) *shutdownRig {
	ctx := wiretest.Context(t)
	r := &shutdownRig{callErrs: make(chan error, 2)}
	wait := r.handlers.Block
	parent, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	r.cancelCtx = cancel
	r.conn, r.peer = wiretest.Connect(t, tr, wiretest.Mux{
		"x/wait": wait, "x/note": wait, "x/hold": wait,
	}, nil, wiretest.With{Parent: parent})
	r.peer.Request("1", "x/wait", "")
	r.peer.Request("2", "x/hold", "")
	r.peer.Notify("x/note", "")
	for range 3 {
		r.handlers.NextStart(t, ctx)
	}
	for range 2 {
		go func() { r.callErrs <- r.conn.Call(context.Background(), "peer/pending", nil, nil) }()
	}
	// Read what the Conn writes from here on, so it is never stuck.
	for range 2 {
		r.peer.ExpectRequest(ctx, "peer/pending")
	}
	return r
}

// check verifies the state of a closed connection.
func (r *shutdownRig) check(t *testing.T) {
	t.Helper()
	ctx := wiretest.Context(t)
	wiretest.Recv(t, ctx, r.conn.Done())
	assert.ErrorIs(t, r.conn.Err(), acprpc.ErrConnClosed)
	for range 3 {
		_, cause := r.handlers.NextReturn(t, ctx)
		assert.ErrorIs(t, cause, acprpc.ErrConnClosed)
		assert.NotErrorIs(t, cause, acprpc.ErrPeerCancelled)
	}
	for range 2 {
		err := wiretest.Recv(t, ctx, r.callErrs)
		assert.ErrorIs(t, err, acprpc.ErrConnClosed)
		var ce *acprpc.CallError
		assert.ErrorAs(t, err, &ce)
	}
	closeWithin(t, r.conn, 5*time.Second)
	closeWithin(t, r.conn, 5*time.Second) // twice is fine
	err := r.conn.Call(ctx, "peer/after", nil, nil)
	assert.ErrorIs(t, err, acprpc.ErrConnClosed)
	assert.ErrorIs(t, r.conn.Notify(ctx, "peer/after", nil), acprpc.ErrConnClosed)
	assert.Zero(t, r.conn.Stats().OutgoingInFlight)
}

// Whatever closes the connection (Close, the peer's end of input, NewConn's
// context), every handler's context ends with ErrConnClosed, every pending
// call returns ErrConnClosed, Close returns (twice), and no goroutine is
// left.
func TestShutdown(t *testing.T) {
	triggers := []struct {
		name string
		do   func(t *testing.T, r *shutdownRig)
		err  func(t *testing.T, err error)
	}{
		{"Close", func(t *testing.T, r *shutdownRig) { closeWithin(t, r.conn, 5*time.Second) }, nil},
		{"peer EOF", func(t *testing.T, r *shutdownRig) { r.peer.CloseWrite() }, nil},
		{"context", func(t *testing.T, r *shutdownRig) { r.cancelCtx(errors.New("host shutting down")) },
			func(t *testing.T, err error) { assert.ErrorContains(t, err, "host shutting down") }},
	}
	for _, trig := range triggers {
		t.Run(trig.name, func(t *testing.T) {
			wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
				leaks := goleak.IgnoreCurrent()
				ctx := wiretest.Context(t)
				r := newShutdownRig(t, tr)
				trig.do(t, r)
				r.check(t)
				if trig.err != nil {
					trig.err(t, r.conn.Err())
				}
				// What the Conn wrote last: nothing, or -32800 for what it
				// was serving, at most once each.
				rest := r.peer.Rest(ctx)
				seen := map[string]bool{}
				for _, m := range rest {
					require.True(t, m.IsResponse(), m.Raw)
					require.False(t, seen[string(m.ID)], "second answer: %s", m.Raw)
					seen[string(m.ID)] = true
					switch string(m.ID) {
					case "1", "2": // x/wait and x/hold have no marker
						assert.EqualValues(t, acprpc.CodeRequestCancelled, m.Code(), m.Raw)
					default:
						t.Errorf("unexpected line %s", m.Raw)
					}
				}
				r.peer.Close()
				goleak.VerifyNone(t, leaks)
			})
		})
	}
}

// Close returns promptly when the peer has stopped reading and a write is
// stuck, and leaves no goroutine behind.
func TestShutdownCloseWithStuckWrite(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		leaks := goleak.IgnoreCurrent()
		ctx := wiretest.Context(t)
		returned := make(chan struct{})
		big := strings.Repeat("x", 2<<20)
		c, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) {
			defer close(returned)
			return big, nil
		}), nil)
		p.Request("1", "x/big", "") // its answer will never be read
		wiretest.Recv(t, ctx, (<-chan struct{})(returned))
		require.NoError(t, c.Notify(ctx, "x/more", map[string]string{"pad": big}))
		start := time.Now()
		closeWithin(t, c, 5*time.Second)
		assert.Less(t, time.Since(start), 3*time.Second)
		p.Close()
		goleak.VerifyNone(t, leaks)
	})
}

// Close may be called from a request handler, and from the goroutines of
// several callers at once.
func TestShutdownCloseFromHandler(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		closed := make(chan error, 1)
		c, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(ctx context.Context, _ *acprpc.Request) (any, error) {
			closed <- acprpc.ConnFromContext(ctx).Close()
			return "bye", nil
		}), nil)
		p.Request("1", "x/close", "")
		assert.NoError(t, wiretest.Recv(t, ctx, closed))
		wiretest.Recv(t, ctx, c.Done())
		for _, m := range p.Rest(ctx) {
			assert.Equal(t, "1", string(m.ID), m.Raw)
		}
		errs := make(chan error, 4)
		for range 4 {
			go func() { errs <- c.Close() }()
		}
		for range 4 {
			assert.NoError(t, wiretest.Recv(t, ctx, errs))
		}
	})
}

// A notification handler may close the connection (an "exit" notification).
func TestShutdownCloseFromNotificationHandler(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		closed := make(chan error, 1)
		c, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(ctx context.Context, _ *acprpc.Request) (any, error) {
			closed <- acprpc.ConnFromContext(ctx).Close()
			return nil, nil
		}), nil)
		p.Notify("x/exit", "")
		assert.NoError(t, wiretest.Recv(t, ctx, closed))
		wiretest.Recv(t, ctx, c.Done())
		assert.Empty(t, p.Rest(ctx))
	})
}

// A connection whose input has already ended, or whose context is already
// done, when NewConn is called closes cleanly.
func TestShutdownAtStart(t *testing.T) {
	ctx := wiretest.Context(t)
	for range 200 {
		c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(strings.NewReader(""), io.Discard), nil, nil)
		wiretest.Recv(t, ctx, c.Done())
		assert.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
		require.NoError(t, c.Close())
	}
	for range 200 {
		done, cancel := context.WithCancel(context.Background())
		cancel()
		pr, pw := io.Pipe()
		c := acprpc.NewConn(done, acprpc.NewStreamPipes(pr, pw), nil, nil)
		wiretest.Recv(t, ctx, c.Done())
		assert.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
		assert.ErrorIs(t, c.Err(), context.Canceled)
		require.NoError(t, c.Close())
	}
}

// Hang tests: the ways a peer, a transport or an ordinary handler could make
// Close, Call or the read loop wait for good.

// hangChildEnv makes the test binary, started again by a test, play the
// child process that test needs.
const hangChildEnv = "ACPRPC_HANG_CHILD"

// hangCloseBound is how long Close may take in these tests; the flush wait
// and the bounded waits inside Close are well below it.
const hangCloseBound = 5 * time.Second

// An agent started by os/exec gets blocking stdio: closing its stdout does
// not interrupt a write in progress. With the parent no longer reading and
// a write stuck on a full pipe, Close still returns.
func TestHangCloseOnBlockingStdout(t *testing.T) {
	if os.Getenv(hangChildEnv) == "blocking-stdout" {
		hangChildBlockingStdout()
		return
	}
	ctx := wiretest.Context(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHangCloseOnBlockingStdout$", "-test.count=1")
	cmd.Env = append(os.Environ(), hangChildEnv+"=blocking-stdout")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	_, err = cmd.StdoutPipe() // never read: the child's writes fill the pipe and block
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	err = cmd.Wait()
	require.NoError(t, err, "the child says: %s", stderr.String())
}

// hangChildBlockingStdout is the agent: it serves its stdio, queues more than
// a pipe holds for a parent that never reads, and closes. It exits 0 if Close
// returned within the bound.
func hangChildBlockingStdout() {
	if err := os.Stdout.SetDeadline(time.Time{}); !errors.Is(err, os.ErrNoDeadline) {
		hangChildExit(4, "stdout is not a blocking file here (SetDeadline: %v)", err)
	}
	c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(os.Stdin, os.Stdout), nil, nil)
	err := c.Notify(context.Background(), "x/big", map[string]string{"pad": strings.Repeat("x", 1<<20)})
	if err != nil {
		hangChildExit(5, "notify: %v", err)
	}
	closed := make(chan struct{})
	go func() {
		_ = c.Close()
		close(closed)
	}()
	select {
	case <-closed:
		os.Exit(0)
	case <-time.After(hangCloseBound):
		hangChildExit(3, "Close did not return within %v with a write stuck on a blocking stdout", hangCloseBound)
	}
}

func hangChildExit(code int, format string, args ...any) {
	_, _ = io.WriteString(os.Stderr, strings.TrimSpace(fmt.Sprintf(format, args...))+"\n")
	os.Exit(code)
}

// The same with an output no close can reach: an io.MultiWriter (stdout and
// a log, say) is not an io.Closer. A write stuck in it does not hold Close.
func TestHangCloseOnWriterThatIsNotACloser(t *testing.T) {
	ctx := wiretest.Context(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // nobody reads outR until the end
	t.Cleanup(func() {
		_ = inW.Close()
		_ = outR.Close() // ends the stuck write, and with it the writer
	})
	writing := make(chan struct{})
	var once atomic.Bool
	signal := writerFunc(func(p []byte) (int, error) {
		if once.CompareAndSwap(false, true) {
			close(writing)
		}
		return len(p), nil
	})
	out := io.MultiWriter(signal, outW) // the signal first: then the write into the pipe, which blocks
	c := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(inR, out), nil, nil)
	require.NoError(t, c.Notify(ctx, "x/big", map[string]string{"pad": strings.Repeat("x", 1<<20)}))
	wiretest.Recv(t, ctx, writing)
	closeWithin(t, c, hangCloseBound)
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Every ending of a call goes through the barrier, an answer too large to
// keep included: Call does not return before a notification sent ahead of
// that answer has been handled.
func TestHangOverLongAnswerWaitsForBarrier(t *testing.T) {
	const limit = 1000
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		started, release := make(chan struct{}), make(chan struct{})
		var handled atomic.Bool
		c, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/slow": func(context.Context, *acprpc.Request) (any, error) {
				close(started)
				<-release
				handled.Store(true)
				return nil, nil
			},
			"x/ping": wiretest.Ping,
		}, &acprpc.Options{MaxMessageSize: limit})
		type outcome struct {
			err     error
			handled bool
		}
		done := make(chan outcome, 1)
		go func() {
			err := c.Call(ctx, "peer/big", nil, nil)
			done <- outcome{err, handled.Load()}
		}()
		req := p.ExpectRequest(ctx, "peer/big")
		p.Notify("x/slow", "")
		wiretest.Recv(t, ctx, started)
		p.Respond(string(req.ID), `"`+strings.Repeat("y", 2*limit)+`"`)
		p.Request("1", "x/ping", "")
		p.ExpectResult(ctx, "1", `"pong"`) // the over-long answer has been read
		select {
		case o := <-done:
			t.Fatalf("Call returned (%v) before the notification ahead of its answer was handled", o.err)
		default:
		}
		close(release)
		o := wiretest.Recv(t, ctx, done)
		assert.True(t, o.handled, "Call returned before the notification was handled")
		var rpcErr *acprpc.Error
		require.ErrorAs(t, o.err, &rpcErr)
		assert.Contains(t, rpcErr.Message, "too large")
	})
}

// An idle connection holds its read goroutine alone: the writer and
// notification goroutines run only while there is something to write or
// handle, and handler goroutines leave once they have waited a while for
// another request.

// awaitGoroutines waits until at most n goroutines run. The runtime offers
// nothing to wake on here, so the count is polled.
func awaitGoroutines(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			stacks := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, stacks[:runtime.Stack(stacks, true)])
		}
	}
}

func TestIdleConnGoroutines(t *testing.T) {
	ctx := wiretest.Context(t)
	const burst = 8
	running := make(chan struct{}, burst)
	release := make(chan struct{})
	noted := make(chan struct{}, 2)
	h := acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
		switch req.Method {
		case "x/note":
			noted <- struct{}{}
		case "x/hold":
			running <- struct{}{}
			<-release
		}
		return struct{}{}, nil
	})
	base := runtime.NumGoroutine()
	a, b := acprpc.Pipe()
	server := acprpc.NewConn(ctx, b, h, nil)
	defer server.Close()
	client := acprpc.NewConn(ctx, a, h, nil)
	defer client.Close()
	awaitGoroutines(t, ctx, base+2) // a read goroutine each

	// A call and a notification each way, then quiet.
	require.NoError(t, client.Call(ctx, "x/ping", nil, nil))
	require.NoError(t, server.Call(ctx, "x/ping", nil, nil))
	require.NoError(t, client.Notify(ctx, "x/note", nil))
	require.NoError(t, server.Notify(ctx, "x/note", nil))
	wiretest.Recv(t, ctx, noted)
	wiretest.Recv(t, ctx, noted)
	awaitGoroutines(t, ctx, base+2)

	// A burst of calls at once, then quiet.
	var wg sync.WaitGroup
	for range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, client.Call(ctx, "x/hold", nil, nil))
		}()
	}
	for range burst {
		wiretest.Recv(t, ctx, running)
	}
	close(release)
	wg.Wait()
	awaitGoroutines(t, ctx, base+2)
}

// The Logger hears about bad lines, ignored cancels and panics.
func TestConnLogs(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	logger := log.Logger()
	_, p := wiretest.Connect(t, wiretest.Transports[1], wiretest.Mux{"ping": wiretest.Ping},
		&acprpc.Options{Logger: logger})
	p.Send(`{oops`)
	p.ExpectError(ctx, "null", acprpc.CodeParseError)
	p.Notify(acprpc.MethodCancelRequest, `{"id":3}`)
	p.Request("1", "ping", "")
	p.ExpectResult(ctx, "1", `"pong"`)
	_, ok := log.FindLogged(slog.LevelWarn, "not JSON")
	assert.True(t, ok, "bad line not logged: %v", log.Logged())
	_, ok = log.FindLogged(slog.LevelWarn, "malformed")
	assert.True(t, ok, "malformed cancel not logged: %v", log.Logged())
}

// Stats counts requests in flight each way and cancels each way.
func TestConnStats(t *testing.T) {
	ctx := wiretest.Context(t)
	started := make(chan struct{}, 4)
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{
		"x/wait": func(ctx context.Context, _ *acprpc.Request) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		},
		"ping": wiretest.Ping,
	}, nil)
	assert.Equal(t, acprpc.Stats{}, c.Stats())
	p.Request("1", "x/wait", "")
	p.Request("2", "x/wait", "")
	wiretest.Recv(t, ctx, started)
	wiretest.Recv(t, ctx, started)
	assert.Equal(t, 2, c.Stats().IncomingInFlight)

	callCtx, cancelCall := context.WithCancel(ctx)
	callDone := make(chan error, 1)
	go func() { callDone <- c.Call(callCtx, "peer/thing", nil, nil) }()
	p.ExpectRequest(ctx, "peer/thing")
	assert.Equal(t, 1, c.Stats().OutgoingInFlight)
	cancelCall()
	assert.ErrorIs(t, wiretest.Recv(t, ctx, callDone), acprpc.ErrCancelled)
	p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
	assert.EqualValues(t, 1, c.Stats().CancelsSent)
	// The cancelled call's ID stays reserved until its answer comes.
	assert.Equal(t, 1, c.Stats().OutgoingInFlight)
	p.RespondError("1", acprpc.CodeRequestCancelled, "Request cancelled")

	p.Cancel("1")
	p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
	p.Cancel("99")                                  // unknown: counted as received, ignored
	p.Notify(acprpc.MethodCancelRequest, `{"x":1}`) // malformed: not counted
	p.Request("3", "ping", "")
	p.ExpectResult(ctx, "3", `"pong"`)
	s := c.Stats()
	assert.Equal(t, 1, s.IncomingInFlight)
	assert.Equal(t, 0, s.OutgoingInFlight)
	assert.EqualValues(t, 2, s.CancelsReceived)
	assert.EqualValues(t, 1, s.CancelsSent)
}
