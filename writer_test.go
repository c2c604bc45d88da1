package acprpc_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// The write side: a sender writes its message itself when the transport is
// free, and the writer goroutine writes the queue otherwise. Whichever
// writes, every message goes out once, whole, in the order the sends were
// serialised, which the Sent hook sees as the wire does.

// sentLog records the Sent hook's messages in the order it saw them.
type sentLog struct {
	mu  sync.Mutex
	raw []string
}

func (l *sentLog) hooks() acprpc.Hooks {
	return acprpc.Hooks{Sent: func(_ context.Context, m *acprpc.Message) {
		l.mu.Lock()
		l.raw = append(l.raw, string(m.Raw))
		l.mu.Unlock()
	}}
}

func (l *sentLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.raw...)
}

// senderParams is what each test message carries: who sent it, its place in
// that sender's order, and padding of a size that varies, so that some
// writes fill the pipe part way.
type senderParams struct {
	G   int    `json:"g"`
	I   int    `json:"i"`
	Pad string `json:"pad,omitempty"`
}

func newSenderParams(g, i int) senderParams {
	return senderParams{G: g, I: i, Pad: strings.Repeat("p", (g*131+i*977)%9000)}
}

// checkSenderOrder fails unless each sender's messages among lines come in
// the order it sent them, and returns how many each sent.
func checkSenderOrder(t *testing.T, params []json.RawMessage) map[int]int {
	t.Helper()
	next := map[int]int{}
	for _, raw := range params {
		var p senderParams
		require.NoError(t, json.Unmarshal(raw, &p))
		require.Equal(t, next[p.G], p.I, "sender %d's messages out of order", p.G)
		next[p.G]++
	}
	return next
}

// TestWriterOrderManySenders: many goroutines call and notify at once
// while the peer reads and answers; the wire carries every message once, in
// each sender's order, exactly as the Sent hook saw them.
func TestWriterOrderManySenders(t *testing.T) {
	senders, each := 16, 60
	if testing.Short() {
		each = 20
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var sent sentLog
		c, p := wiretest.Connect(t, tr, nil, &acprpc.Options{Hooks: sent.hooks()})
		errs := make(chan error, senders)
		for g := range senders {
			go func() {
				var err error
				for i := 0; i < each && err == nil; i++ {
					if i%3 == 0 {
						err = c.Call(ctx, "x/call", newSenderParams(g, i), nil)
					} else {
						err = c.Notify(ctx, "x/note", newSenderParams(g, i))
					}
				}
				errs <- err
			}()
		}
		var wire []string
		var params []json.RawMessage
		for range senders * each {
			m := p.Expect(ctx)
			wire = append(wire, m.Raw)
			params = append(params, m.Params)
			if m.IsRequest() {
				p.Respond(string(m.ID), `{}`)
			}
		}
		for range senders {
			require.NoError(t, wiretest.Recv(t, ctx, errs))
		}
		counts := checkSenderOrder(t, params)
		for g := range senders {
			assert.Equal(t, each, counts[g], "sender %d", g)
		}
		assert.Equal(t, wire, sent.lines(), "the Sent hook's order is the wire's")
	})
}

// TestWriterOrderManySendersPipe is the same between two Conns over Pipe,
// whose ends hand messages over without a buffer: the receiving side's
// Received hook sees what the sending side's Sent hook saw, in order.
func TestWriterOrderManySendersPipe(t *testing.T) {
	senders, each := 16, 60
	ctx := wiretest.Context(t)
	var sent, received sentLog
	a, b := acprpc.Pipe()
	recvHooks := acprpc.Hooks{Received: func(_ context.Context, m *acprpc.Message) {
		received.mu.Lock()
		received.raw = append(received.raw, string(m.Raw))
		received.mu.Unlock()
	}}
	server := acprpc.NewConn(ctx, b, acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) {
		return struct{}{}, nil
	}), &acprpc.Options{Hooks: recvHooks})
	defer server.Close()
	client := acprpc.NewConn(ctx, a, nil, &acprpc.Options{Hooks: sent.hooks()})
	defer client.Close()

	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if i%3 == 0 {
					assert.NoError(t, client.Call(ctx, "x/call", newSenderParams(g, i), nil))
				} else {
					assert.NoError(t, client.Notify(ctx, "x/note", newSenderParams(g, i)))
				}
			}
		}()
	}
	wg.Wait()
	// A last call: its answer comes after the server has read everything.
	require.NoError(t, client.Call(ctx, "x/last", nil, nil))
	got := received.lines()
	require.Len(t, got, senders*each+1)
	var params []json.RawMessage
	for _, line := range got[:len(got)-1] {
		m, err := wiretest.Parse(line)
		require.NoError(t, err)
		params = append(params, m.Params)
	}
	checkSenderOrder(t, params)
	assert.Equal(t, got, sent.lines(), "what one side sent is what the other received, in order")
}

// TestWriterStuckPeerBlocksNobody: with a peer that has stopped reading,
// Notify (within MaxUnsentNotifications) and Call still return, from any
// number of goroutines, and nothing is lost: once the peer reads again
// every message arrives, in each sender's order. The first calls are written by their callers while the
// pipe fills, until one fits only in part; the rest queue behind it.
func TestWriterStuckPeerBlocksNobody(t *testing.T) {
	const senders, notes, big = 8, 20, 6
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		// The peer reads nothing until told; every notification fits.
		c, p := wiretest.Connect(t, tr, nil, &acprpc.Options{MaxUnsentNotifications: senders * notes, MaxUnsentNotificationBytes: 4 << 20})
		callCtx, cancelCalls := context.WithCancel(ctx)
		called := make(chan error, senders+big)
		// One after another, so that each is likely to find the write side
		// free: six requests of 30 KiB are more than a pipe holds.
		for i := range big {
			go func() {
				p := senderParams{G: senders, I: i, Pad: strings.Repeat("b", 30<<10)}
				called <- c.Call(callCtx, "x/big", p, nil)
			}()
			awaitOutgoing(t, ctx, c, i+1)
		}
		noted := make(chan error, senders)
		for g := range senders {
			go func() {
				var err error
				for i := 0; i < notes && err == nil; i++ {
					err = c.Notify(ctx, "x/note", newSenderParams(g, i))
				}
				noted <- err
				if err == nil {
					err = c.Call(callCtx, "x/call", newSenderParams(g, notes), nil)
				}
				called <- err
			}()
		}
		for range senders {
			require.NoError(t, wiretest.Recv(t, ctx, noted), "Notify returns with the peer stuck")
		}
		awaitOutgoing(t, ctx, c, senders+big)
		cancelCalls()
		for range senders + big {
			err := wiretest.Recv(t, ctx, called)
			require.ErrorIs(t, err, acprpc.ErrCancelled, "Call returns with the peer stuck")
		}

		// The peer reads again: each sender's messages in its order, and
		// after each request its cancel.
		var params []json.RawMessage
		requests, cancels := map[string]bool{}, map[string]bool{}
		bigs := 0
		for range big*2 + senders*(notes+2) {
			m := p.Expect(ctx)
			if m.Method == acprpc.MethodCancelRequest {
				id := string(m.ParamMember("requestId"))
				require.True(t, requests[id], "the cancel of %s before its request", id)
				cancels[id] = true
				continue
			}
			if m.IsRequest() {
				requests[string(m.ID)] = true
			}
			if m.Method == "x/big" {
				bigs++ // each from a goroutine of its own: in no order
				continue
			}
			params = append(params, m.Params)
		}
		assert.Len(t, cancels, senders+big)
		assert.Equal(t, big, bigs, "the big requests")
		counts := checkSenderOrder(t, params)
		for g := range senders {
			assert.Equal(t, notes+1, counts[g], "sender %d", g)
		}
	})
}

// TestWriterStuckPipePeerBlocksNobody is the same over Pipe, whose peer is
// stuck when its Conn has stopped reading.
func TestWriterStuckPipePeerBlocksNobody(t *testing.T) {
	ctx := wiretest.Context(t)
	a, b := acprpc.Pipe()
	const senders, notes = 8, 20
	release, allNoted := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var params []json.RawMessage // written by the notification goroutine only
	// The server's first notification handler blocks, and with a queue of
	// one behind it the server stops reading: a peer that is stuck.
	server := acprpc.NewConn(ctx, b, acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
		if req.IsNotification() {
			once.Do(func() { <-release })
			params = append(params, req.Params)
			if len(params) == senders*notes {
				close(allNoted)
			}
		}
		return nil, nil
	}), &acprpc.Options{MaxQueuedNotifications: 1})
	defer server.Close()
	client := acprpc.NewConn(ctx, a, nil, &acprpc.Options{MaxUnsentNotifications: senders * notes, MaxUnsentNotificationBytes: 4 << 20})
	defer client.Close()

	noted := make(chan error, senders)
	for g := range senders {
		go func() {
			var err error
			for i := 0; i < notes && err == nil; i++ {
				err = client.Notify(ctx, "x/note", newSenderParams(g, i))
			}
			noted <- err
		}()
	}
	for range senders {
		require.NoError(t, wiretest.Recv(t, ctx, noted), "Notify returns with the peer stuck")
	}
	callCtx, cancel := context.WithCancel(ctx)
	called := goCall(client, callCtx, "x/call", nil, nil)
	cancel()
	require.ErrorIs(t, wiretest.Recv(t, ctx, called), acprpc.ErrCancelled, "Call returns with the peer stuck")
	close(release)
	// Nothing was lost, and each sender's notifications came in its order.
	wiretest.Recv(t, ctx, allNoted) // every notification to be handled
	for g, n := range checkSenderOrder(t, params) {
		assert.Equal(t, notes, n, "sender %d", g)
	}
}

// awaitOutgoing waits until n of c's calls await answers. The Conn offers
// nothing to wake on here, so its counters are polled.
func awaitOutgoing(t *testing.T, ctx context.Context, c *acprpc.Conn, n int) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for c.Stats().OutgoingInFlight < n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%d calls in flight, want %d", c.Stats().OutgoingInFlight, n)
		}
	}
}

// TestWriterHandsOnWhatQueuedDuringAWrite: a message sent while another is
// being written waits its turn, and goes out even if nothing is sent after
// it. The Sent hook of the first message, which runs while the write side
// is held, sends the second from another goroutine and waits for it.
func TestWriterHandsOnWhatQueuedDuringAWrite(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var c *acprpc.Conn
		var once sync.Once
		hooks := acprpc.Hooks{Sent: func(_ context.Context, m *acprpc.Message) {
			if m.Method != "x/first" {
				return
			}
			once.Do(func() {
				noted := make(chan error, 1)
				go func() { noted <- c.Notify(ctx, "x/second", nil) }()
				assert.NoError(t, wiretest.Recv(t, ctx, noted))
			})
		}}
		c, p := wiretest.Connect(t, tr, nil, &acprpc.Options{Hooks: hooks})
		called := goCall(c, ctx, "x/first", nil, nil)
		req := p.ExpectRequest(ctx, "x/first")
		p.ExpectNotification(ctx, "x/second")
		p.Respond(string(req.ID), `{}`)
		require.NoError(t, wiretest.Recv(t, ctx, called))
	})
}

// json.RawMessage tests: a raw value goes out as one compact line, or not
// at all when it is not JSON.

const rawPretty = "{\n  \"content\": [\n    1,\n    2\n  ],\n  \"text\": \"a  b\"\n}"

// A handler's json.RawMessage result is compacted onto the answer's line
// (pretty-printed JSON would break the line framing); one that is empty or
// not JSON is answered -32603.
func TestRawResults(t *testing.T) {
	cases := []struct {
		raw  json.RawMessage
		want string // the result, or "" for -32603
	}{
		{json.RawMessage(rawPretty), `{"content":[1,2],"text":"a  b"}`},
		{json.RawMessage(" \t\"padded\"\r\n"), `"padded"`},
		{json.RawMessage(`{"compact":true}`), `{"compact":true}`},
		{json.RawMessage(""), ""},
		{json.RawMessage(" "), ""},
		{json.RawMessage(`{"a":`), ""},
		{json.RawMessage(`{"a":1}}`), ""},
		{json.RawMessage(`{"a":1} {"b":2}`), ""},
		{json.RawMessage("nope"), ""},
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		raw := make(chan json.RawMessage, 1)
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/raw": func(context.Context, *acprpc.Request) (any, error) { return <-raw, nil },
		}, nil)
		for i, tc := range cases {
			id := string(rune('1' + i))
			raw <- tc.raw
			p.Request(id, "x/raw", "")
			m := p.ExpectAnswer(ctx, id)
			if tc.want == "" {
				require.NotNil(t, m.Error, "%q answered %s", tc.raw, m.Raw)
				assert.EqualValues(t, acprpc.CodeInternalError, m.Error.Code)
				assert.Contains(t, m.Error.Message, "not valid JSON")
				continue
			}
			assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":`+tc.want+`}`, m.Raw)
		}
	})
}

// json.RawMessage params are compacted too; ones that are not JSON fail the
// Call or Notify at once, and nothing is sent.
func TestRawParams(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, nil, nil)

		for _, bad := range []json.RawMessage{json.RawMessage(""), json.RawMessage(`[1,`), json.RawMessage("{}\n{}")} {
			err := c.Call(ctx, "peer/bad", bad, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not valid JSON")
			assert.NotErrorIs(t, err, acprpc.ErrConnClosed)
			err = c.Notify(ctx, "peer/bad", bad)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not valid JSON")
		}
		assert.Zero(t, c.Stats().OutgoingInFlight, "a call that was never sent holds no ID")

		require.NoError(t, c.Notify(ctx, "peer/pretty", json.RawMessage(rawPretty)))
		m := p.ExpectNotification(ctx, "peer/pretty") // the first line: nothing bad was sent
		assert.Equal(t, `{"jsonrpc":"2.0","method":"peer/pretty","params":{"content":[1,2],"text":"a  b"}}`, m.Raw)

		done := make(chan error, 1)
		go func() { done <- c.Call(ctx, "peer/pretty", json.RawMessage(rawPretty), nil) }()
		m = p.ExpectRequest(ctx, "peer/pretty")
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"method":"peer/pretty","params":{"content":[1,2],"text":"a  b"}}`, m.Raw)
		p.Respond(string(m.ID), "null")
		require.NoError(t, wiretest.Recv(t, ctx, done))
	})
}

// A cancellation marker is a json.RawMessage too: a pretty-printed one goes
// out compact, and one that is not JSON gives way to -32800.
func TestRawCancelMarkers(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		_, p := wiretest.Connect(t, tr, wiretest.Mux{"x/pretty": wiretest.Hold(nil), "x/broken": wiretest.Hold(nil)},
			&acprpc.Options{CancelMarkers: map[string]json.RawMessage{
				"x/pretty": json.RawMessage("{\n \"outcome\": \"cancelled\"\n}"),
				"x/broken": json.RawMessage(`{"outcome":`),
			}})
		p.Request("1", "x/pretty", "")
		p.Cancel("1")
		m := p.ExpectAnswer(ctx, "1")
		assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"outcome":"cancelled"}}`, m.Raw)
		p.Request("2", "x/broken", "")
		p.Cancel("2")
		p.ExpectError(ctx, "2", acprpc.CodeRequestCancelled)
	})
}
