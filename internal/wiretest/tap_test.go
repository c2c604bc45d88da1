package wiretest

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sender is a transport that hands every message sent to a function, has
// nothing to receive, and notes the limit and flushes it is given.
type sender struct {
	send    func(msg []byte) error
	limit   int
	flushes int
}

func (s *sender) Send(msg []byte) error { return s.send(msg) }
func (s *sender) Recv() ([]byte, error) { return nil, io.EOF }
func (s *sender) Close() error          { return nil }
func (s *sender) SetReadLimit(n int)    { s.limit = n }
func (s *sender) Flush() error          { s.flushes++; return nil }

func sendFunc(f func(msg []byte) error) *sender { return &sender{send: f} }

// A tap that wrote a line before recording it let a test that synced on the
// far end's read look at the ledger too early: TestStressCancellation then
// saw its last request "answered 0 times" about once in 170 runs. A Tap
// records first: by the time a message reaches the transport, the ledger
// has it.
func TestTapRecordsBeforeSending(t *testing.T) {
	l := &Ledger{}
	sent := 0
	tap := newTap(sendFunc(func(msg []byte) error {
		sent++
		require.Equal(t, sent, l.Tally(AtoB).Lines, "%s reached the transport before the ledger had it", msg)
		return nil
	}), l, AtoB)
	for _, msg := range []string{RequestLine("1", "a", `{"k":"v"}`), resultLine("2", "true"), notificationLine("n", "")} {
		require.NoError(t, tap.Send([]byte(msg)))
	}
	assert.Equal(t, 3, sent)
	assert.Equal(t, 1, l.Open(AtoB))
}

// The same across every transport: once the peer has read an answer, the
// Conn's tap has it. (With the old order this failed within a few hundred
// rounds.)
func TestTapAnswerRecordedBeforePeerReadsIt(t *testing.T) {
	Run(t, func(t *testing.T, tr Transport) {
		ctx := Context(t)
		_, p := Connect(t, tr, Mux{"ping": Ping}, nil, With{Tapped: true})
		tap := p.Tap()
		for i := range 500 {
			id := strings.Repeat("1", 1+i%7)
			p.Request(id, "ping", "")
			p.ExpectResult(ctx, id, `"pong"`)
			require.Equal(t, i+1, tap.Ledger().Tally(AtoB).Lines, "round %d: the peer read an answer the tap had not recorded", i)
		}
	})
}

func TestTapInjects(t *testing.T) {
	l := &Ledger{}
	var out []string
	tap := newTap(sendFunc(func(msg []byte) error { out = append(out, string(msg)); return nil }), l, BtoA)
	n := 0
	tap.Inject = func(got *Ledger, d Direction) []byte {
		assert.Same(t, l, got)
		assert.Equal(t, BtoA, d)
		n++
		if n%2 == 1 {
			return nil
		}
		got.Owe(d, `"bad"`)
		return []byte("bad line")
	}
	one, two, three := RequestLine("1", "m", ""), RequestLine("2", "m", ""), RequestLine("3", "m", "")
	for _, msg := range []string{one, two, three} {
		require.NoError(t, tap.Send([]byte(msg)))
	}
	assert.Equal(t, []string{one, two, "bad line", three}, out)
	assert.Equal(t, 3, l.Tally(BtoA).Lines, "injected messages are not recorded")
	assert.Equal(t, 1, l.Tally(BtoA).Owed)
	assert.Equal(t, 4, l.Open(BtoA))
}

func TestTapCountsAttemptedBytes(t *testing.T) {
	ctx := Context(t)
	tap := newTap(sendFunc(func([]byte) error { return nil }), &Ledger{}, AtoB)
	past := tap.Past(10)
	require.NoError(t, tap.Send([]byte("1234"))) // and a line end
	select {
	case <-past:
		t.Fatal("past 10 after 5 bytes")
	default:
	}
	require.NoError(t, tap.Send([]byte("6789")))
	Recv(t, ctx, past)        // 10 bytes
	Recv(t, ctx, tap.Past(3)) // a mark already passed
	assert.EqualValues(t, 10, tap.Attempted())
	assert.Len(t, tap.Ledger().Tally(AtoB).Problems, 2, "neither is JSON")
}

// A Tap passes the Conn's read limit and flushes on, or a Stream under it
// would keep the default limit and never write.
func TestTapPassesLimitAndFlush(t *testing.T) {
	inner := sendFunc(func([]byte) error { return nil })
	tap := newTap(inner, &Ledger{}, AtoB)
	tap.SetReadLimit(77)
	require.NoError(t, tap.Flush())
	assert.Equal(t, 77, inner.limit)
	assert.Equal(t, 1, inner.flushes)
	_, err := tap.Recv()
	assert.ErrorIs(t, err, io.EOF)
	assert.NoError(t, tap.Close())
}
