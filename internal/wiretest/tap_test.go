package wiretest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// writerFunc is an output made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
func (f writerFunc) Close() error                { return nil }

// A tap that wrote a line before recording it let a test that synced on the
// far end's read look at the ledger too early: TestStressCancellation then
// saw its last request "answered 0 times" about once in 170 runs. A Tap
// records first: by the time a line's last byte reaches the output, the
// ledger has the line, however the writes split it.
func TestTapRecordsBeforeWriting(t *testing.T) {
	text := RequestLine("1", "a", `{"k":"v"}`) + "\n" + ResultLine("2", "true") + "\n" + NotificationLine("n", "") + "\n"
	for _, cuts := range [][]int{nil, {1, 30, 31, 70}, {10, 20, 40, 60, 80, 100, len(text) - 1}} {
		l := &Ledger{}
		var out bytes.Buffer
		tap := NewTap(writerFunc(func(p []byte) (int, error) {
			out.Write(p)
			complete := bytes.Count(out.Bytes(), []byte("\n"))
			require.GreaterOrEqual(t, l.Tally(AtoB).Lines, complete, "a line reached the output before the ledger had it")
			return len(p), nil
		}), l, AtoB)
		from := 0
		for _, to := range append(cuts, len(text)) {
			n, err := tap.Write([]byte(text[from:to]))
			require.NoError(t, err)
			require.Equal(t, to-from, n)
			from = to
		}
		assert.Equal(t, text, out.String())
		assert.Equal(t, 3, l.Tally(AtoB).Lines)
	}
}

// The same across a pipe: once the peer has read an answer, the Conn's tap
// has it. (With the old order, this failed within a few hundred rounds.)
func TestTapAnswerRecordedBeforePeerReadsIt(t *testing.T) {
	ctx := Context(t)
	_, p, tap := ConnectTapped(context.Background(), t, Mux{"ping": Ping}, nil, nil)
	for i := range 500 {
		id := strings.Repeat("1", 1+i%7)
		p.Request(id, "ping", "")
		p.ExpectResult(ctx, id, `"pong"`)
		require.Equal(t, i+1, tap.Ledger().Tally(AtoB).Lines, "round %d: the peer read an answer the tap had not recorded", i)
	}
}

func TestTapInjects(t *testing.T) {
	l := &Ledger{}
	var out bytes.Buffer
	tap := NewTap(writerFunc(out.Write), l, BtoA)
	n := 0
	tap.Inject = func(got *Ledger, d Direction) []byte {
		assert.Same(t, l, got)
		assert.Equal(t, BtoA, d)
		n++
		if n%2 == 1 {
			return nil
		}
		got.Owe(d, `"bad"`)
		return []byte("bad line\n")
	}
	one, two, three := RequestLine("1", "m", ""), RequestLine("2", "m", ""), RequestLine("3", "m", "")
	written, err := tap.Write([]byte(one + "\n" + two + "\n" + three[:5]))
	require.NoError(t, err)
	assert.Equal(t, len(one)+len(two)+7, written, "the injected bytes are not counted")
	_, err = tap.Write([]byte(three[5:] + "\n"))
	require.NoError(t, err)
	assert.Equal(t, one+"\n"+two+"\nbad line\n"+three+"\n", out.String())
	assert.Equal(t, 3, l.Tally(BtoA).Lines, "injected lines are not recorded")
	assert.Equal(t, 1, l.Tally(BtoA).Owed)
}

func TestTapCountsAttemptedBytes(t *testing.T) {
	ctx := Context(t)
	tap := NewTap(Discard, &Ledger{}, AtoB)
	past := tap.Past(10)
	_, _ = tap.Write([]byte("12345"))
	select {
	case <-past:
		t.Fatal("past 10 after 5 bytes")
	default:
	}
	_, _ = tap.Write([]byte("67890"))
	WaitFor(t, ctx, past, "10 bytes")
	WaitFor(t, ctx, tap.Past(3), "a mark already passed")
	assert.EqualValues(t, 10, tap.Attempted())
}

func TestFailAfter(t *testing.T) {
	var out bytes.Buffer
	w := FailAfter(writerFunc(out.Write), 5)
	n, err := w.Write([]byte("abc"))
	assert.Equal(t, 3, n)
	assert.NoError(t, err)
	n, err = w.Write([]byte("defg"))
	assert.Equal(t, 2, n)
	assert.ErrorIs(t, err, ErrBrokenOutput)
	_, err = w.Write([]byte("h"))
	assert.ErrorIs(t, err, ErrBrokenOutput)
	assert.Equal(t, "abcde", out.String())
	assert.NoError(t, w.Close())
}

func TestPeerDrainsAndSendsInBackground(t *testing.T) {
	ctx := Context(t)
	for _, read := range []bool{false, true} {
		c, p, tap := ConnectTapped(context.Background(), t, Mux{"echo": Echo}, nil, nil)
		if read {
			p.Request("0", "echo", "[0]")
			p.ExpectAnswer(ctx, "0")
		}
		var lines []string
		for i := 1; i <= 200; i++ {
			lines = append(lines, RequestLine(strings.Repeat("9", i%5+1), "echo", `"`+strings.Repeat("x", 1000)+`"`))
		}
		sent := p.SendAsync([]byte(strings.Join(lines, "\n") + "\n"))
		drained := p.Drain()
		require.NoError(t, Recv(t, ctx, sent))
		require.NoError(t, tap.Ledger().Await(ctx, func() bool { return tap.Ledger().Answers(AtoB) >= 200 }))
		require.NoError(t, c.Close())
		WaitFor(t, ctx, drained, "the end of the output")
		_, err := p.Next(ctx)
		assert.True(t, err != nil && !errors.Is(err, context.DeadlineExceeded), "read %v", err)
	}
}

func TestWireSettles(t *testing.T) {
	ctx := Context(t)
	var g Gauge
	w := NewWire(t, Side{}, Side{Handler: g.Track(Mux{"echo": Echo, "block": BlockUntilCancelled}.Handle)})
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
	assert.Equal(t, 1, w.Ledger.Notifications(AtoB, MarkMethod))
	assert.Equal(t, 1, w.Ledger.Notifications(BtoA, MarkMethod))
	require.NoError(t, w.Settle(ctx))
	assert.Equal(t, 2, w.Ledger.Notifications(AtoB, MarkMethod))
}
