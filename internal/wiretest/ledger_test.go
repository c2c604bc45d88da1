package wiretest

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

func record(l *Ledger, d Direction, lines ...string) {
	for _, line := range lines {
		l.Record(d, []byte(line+"\n"))
	}
}

func TestLedgerCountsCalls(t *testing.T) {
	l := &Ledger{}
	record(l, AtoB,
		RequestLine("1", "a", `{"x":1}`),
		RequestLine(`"s"`, "b", ""),
		RequestLine("3", "c", ""),
		RequestLine("3", "c", ""), // sent twice
		CancelLine("1"),
		CancelLine("1"),  // cancelled twice
		CancelLine("99"), // before any request 99
		notificationLine("session/update", `{}`),
	)
	require.Equal(t, 3, l.Open(AtoB))
	record(l, BtoA,
		resultLine("1", `{"stopReason":"cancelled"}`),
		errorLine(`"s"`, acprpc.CodeRequestCancelled, "Request cancelled"),
		errorLine(`"s"`, acprpc.CodeRequestCancelled, "Request cancelled"), // answered twice
		resultLine("7", `1`), // answers nothing sent
		errorLine("null", -32700, "Parse error"),
	)
	l.Owe(AtoB, `"bad-1"`)

	out, back := l.Tally(AtoB), l.Tally(BtoA)
	assert.Equal(t, 8, out.Lines)
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 2}, out.Requests)
	assert.Equal(t, 5, out.RequestCount(), "four requests and the owed one")
	assert.Equal(t, map[string]int{acprpc.MethodCancelRequest: 3, "session/update": 1}, out.Notifications)
	assert.Equal(t, 2, back.Results)
	assert.Equal(t, 1, back.Markers)
	assert.Equal(t, map[int64]int{acprpc.CodeRequestCancelled: 2, -32700: 1}, back.Errors)
	assert.Equal(t, 1, back.NullAnswers)
	assert.Equal(t, 5, back.Answers())
	assert.Empty(t, out.Problems)

	c := l.Tally(AtoB)
	assert.Equal(t, 4, c.Requested)
	assert.Equal(t, 2, c.Open, "3 and the owed one")
	assert.Equal(t, []string{`"bad-1"`, "3"}, c.Unanswered)
	assert.Equal(t, []string{`"s"`}, c.Duplicated)
	assert.Equal(t, []string{"7"}, c.Stray)
	assert.Equal(t, []string{"3"}, c.Resent)
	assert.Equal(t, []string{"1"}, c.Recancelled)
	assert.Equal(t, []string{"99"}, c.Precancel)
	assert.Equal(t, 2, c.Cancelled)
	assert.Equal(t, 2, l.Answered(AtoB, `"s"`))
	assert.Zero(t, l.Answered(AtoB, "12345"))
	assert.Empty(t, l.Tally(BtoA).Unanswered)
}

func TestLedgerReportsBadLines(t *testing.T) {
	for _, keep := range []bool{false, true} {
		l := &Ledger{Keep: keep}
		record(l, AtoB, `not json`, `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`)
		assert.Len(t, l.Tally(AtoB).Problems, 2)
		assert.Equal(t, 2, l.Tally(AtoB).Lines)
		ft := &failures{TB: t}
		l.CheckNoDuplicates(ft)
		assert.Len(t, ft.errors, 2, "keep %v", keep)
	}
}

// The shapes a Conn writes are read without a full decode; every other
// line goes through Parse. Both must count a line alike.
func TestLedgerShapesAgreeWithParse(t *testing.T) {
	lines := []string{
		RequestLine("1", "session/prompt", `{"sessionId":"s"}`),
		RequestLine(`"a b"`, "x", ""),
		RequestLine(`"a,b"`, "x", `[1]`),         // a comma in the ID
		RequestLine(`"a\"b"`, "x", `[1]`),        // an escape in the ID
		RequestLine("-5", `we"ird`, ""),          // an escape in the method
		RequestLine("1e3", "x", ""),              // not a plain integer
		notificationLine("session/update", `{}`), //
		notificationLine("n", ""),
		CancelLine("12"),
		CancelLine(`"s,1"`),
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3,"x":1}}`,
		resultLine("1", `{"a":[1,2,{"b":"}"}]}`),
		resultLine("2", `{"outcome":{"outcome":"cancelled"}}`),
		errorLine("3", -32800, "Request cancelled"),
		`{"jsonrpc":"2.0","id":3,"error":{"message":"m","code":-32601}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":5,"message":"m","data":{"x":[1]}}}`,
		errorLine("null", -32700, "Parse error"),
		`{"id":5,"jsonrpc":"2.0","result":true}`,
		`{"jsonrpc":"2.0","result":true,"id":6}`,
		`{"jsonrpc":"2.0","id":7,"method":"m","params":{},"extra":1}`,
		`{"jsonrpc":"2.0","id":8,"result":1,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":9,"result":}`,
		`{"jsonrpc":"2.0","id":null,"method":"m"}`,
		`{"jsonrpc":"2.0","method":42}`,
		`[]`,
	}
	for _, line := range lines {
		shaped, shapedErr := scan([]byte(line))
		m, err := Parse(line)
		if err != nil {
			assert.Error(t, shapedErr, line)
			continue
		}
		require.NoError(t, shapedErr, line)
		want := summarize(m)
		assert.Equal(t, want.kind, shaped.kind, line)
		assert.Equal(t, string(want.id), string(shaped.id), line)
		assert.Equal(t, want.method, shaped.method, line)
		assert.Equal(t, string(want.cancelOf), string(shaped.cancelOf), line)
		assert.Equal(t, want.code, shaped.code, line)
		if want.kind == kindResult {
			assert.True(t, jsonEqual(string(want.result), string(shaped.result)), line)
		}
	}
	_, ok := scanShaped([]byte(RequestLine("1", "m", `{"p":`+strings.Repeat("1", 10)+`}`)))
	assert.True(t, ok, "a Conn's request is read by its shape")
}

func TestLedgerKeepsLinesAndWaits(t *testing.T) {
	ctx := Context(t)
	l := &Ledger{Keep: true}
	got := make(chan Msg, 1)
	go func() { got <- l.AwaitLine(ctx, t, BtoA, func(m Msg) bool { return m.IsAnswerTo("2") }) }()
	record(l, BtoA, resultLine("1", "1"), resultLine("2", "2"))
	m := Recv(t, ctx, got)
	assert.Equal(t, `2`, string(m.Result))
	assert.Len(t, l.Lines(BtoA), 2)
	assert.Empty(t, l.Lines(AtoB))

	short, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, l.Await(short, func() bool { return false }), context.Canceled)
	assert.NoError(t, l.AwaitAnswered(ctx), "nothing asked, nothing open")
	record(l, AtoB, RequestLine("5", "m", ""))
	done := make(chan error, 1)
	go func() { done <- l.AwaitAnswered(ctx) }()
	record(l, BtoA, resultLine("5", "null"))
	assert.NoError(t, Recv(t, ctx, done))
}

func TestLedgerCheckExactlyOnce(t *testing.T) {
	l := &Ledger{}
	record(l, AtoB, RequestLine("1", "m", ""), RequestLine("2", "m", ""))
	record(l, BtoA, resultLine("1", "1"), resultLine("1", "1"), resultLine("3", "1"))
	ft := &failures{TB: t}
	l.CheckExactlyOnce(ft, AtoB)
	assert.Len(t, ft.errors, 3, "2 unanswered, 1 answered twice, 3 stray: %v", ft.errors)
}

// failures is a testing.TB that keeps the errors reported to it.
type failures struct {
	testing.TB
	errors []string
}

func (f *failures) Errorf(format string, args ...any) {
	f.errors = append(f.errors, format)
}

func (f *failures) Helper() {}
