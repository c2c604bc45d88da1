package acprpc_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// ID tests: which string IDs are one request and which are two.

// String IDs that differ only in what cannot be decoded to text (lone
// surrogate escapes, bytes that are not UTF-8) are different requests, so a
// cancel for one never reaches the other; spellings of the same text are
// one ID, so a cancel spelled differently still finds its request.
func TestIDsInvalidTextStaysDistinct(t *testing.T) {
	pairs := []struct {
		name      string
		a, b      string // two IDs in flight at once
		aSpelling string // another spelling of a, for its cancel
	}{
		{"lone surrogates", `"\ud800"`, `"\udfff"`, `"\uD800"`},
		{"a lone surrogate and U+FFFD", `"x\ud800"`, `"x\ufffd"`, `"\u0078\ud800"`},
		{"a lone surrogate and its bytes", `"\udc00"`, "\"\xed\xb0\x80\"", `"\uDC00"`},
		{"bytes that are not UTF-8", "\"\xff\"", "\"\xfe\"", "\"\xff\""},
		{"bad bytes and U+FFFD", "\"\xff\"", "\"\xef\xbf\xbd\"", "\"\xff\""},
		{"a pair and its halves apart", `"\ud83d\ude00"`, `"\ud83d\u0020\ude00"`, "\"\xf0\x9f\x98\x80\""},
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		started := make(chan string, 2)
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/hold": func(ctx context.Context, req *acprpc.Request) (any, error) {
				started <- req.ID.String()
				<-ctx.Done()
				return nil, context.Cause(ctx)
			},
		}, nil)
		for _, pc := range pairs {
			p.Request(pc.a, "x/hold", "")
			assert.Equal(t, pc.a, wiretest.Recv(t, ctx, started), pc.name)
			p.Request(pc.b, "x/hold", "")
			assert.Equal(t, pc.b, wiretest.Recv(t, ctx, started), "%s: %s is taken for %s", pc.name, pc.b, pc.a)

			p.Cancel(pc.b)
			m := p.Expect(ctx)
			require.Equal(t, pc.b, string(m.ID), "%s: the cancel for %s answered %s", pc.name, pc.b, m.Raw)
			assert.EqualValues(t, acprpc.CodeRequestCancelled, m.Code())
			p.Cancel(pc.aSpelling)
			m = p.Expect(ctx)
			require.Equal(t, pc.a, string(m.ID), "%s: the cancel spelled %s answered %s", pc.name, pc.aSpelling, m.Raw)
			assert.EqualValues(t, acprpc.CodeRequestCancelled, m.Code())
		}
	})
}

// An integer-valued JSON number is that integer: 1e0 and 1.0 are the ID 1,
// served like it, and answered with the ID byte for byte as the peer spelled
// it. A number that is no integer, or an integer beyond 64 bits, is still
// refused with "id": null.
func TestIDsIntegerValuedNumbers(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		_, p := wiretest.Connect(t, tr, wiretest.Mux{"ping": wiretest.Ping}, nil)
		for _, id := range []string{"1e0", "1.0", "10e-1", "-2.50E1", "0.0", "-0", "1E+2", "9.223372036854775807e18", "-9223372036854775808.000"} {
			p.Request(id, "ping", "")
			m := p.ExpectResult(ctx, id, `"pong"`)
			assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":"pong"}`, m.Raw, "the ID goes back as it came")
		}
		for _, id := range []string{"1.5", "1e-1", "9223372036854775808", "9.223372036854775808e18", "1e19", "1e400", "-1e999999999999"} {
			p.Request(id, "ping", "")
			p.ExpectError(ctx, "null", acprpc.CodeInvalidRequest)
		}
	})
}

// 1 and 1e0 are one request: the second is refused while the first is in
// flight, and a cancel that spells the ID either way reaches it.
func TestIDsIntegerSpellingsAreOneRequest(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var held wiretest.Recorder
		_, p := wiretest.Connect(t, tr, wiretest.Mux{"x/hold": held.Track(wiretest.Hold(nil))}, nil)
		p.Request("1", "x/hold", "")
		assert.Equal(t, "1", held.NextStart(t, ctx))
		p.Request("1e0", "x/hold", "")
		m := p.ExpectError(ctx, "1e0", acprpc.CodeInvalidRequest)
		assert.Contains(t, m.Raw, "already in flight")
		p.Cancel("100e-2")
		p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)

		p.Request("2.0", "x/hold", "")
		assert.Equal(t, "2.0", held.NextStart(t, ctx))
		p.Cancel("2")
		p.ExpectError(ctx, "2.0", acprpc.CodeRequestCancelled)
	})
}

// An answer to our call 1 that spells its ID 1e0 or 1.0 is that call's
// answer.
func TestIDsAnswerSpelledAsAnIntegerValuedNumber(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, nil, nil)
		for i, spelling := range []string{"1e0", "2.0", "30e-1"} {
			var got string
			done := make(chan error, 1)
			go func() { done <- c.Call(ctx, "peer/echo", nil, &got) }()
			m := p.ExpectRequest(ctx, "peer/echo")
			require.Equal(t, strconv.Itoa(i+1), string(m.ID))
			p.Respond(spelling, `"answered"`)
			require.NoError(t, wiretest.Recv(t, ctx, done), "the answer spelled %s", spelling)
			assert.Equal(t, "answered", got)
		}
	})
}

// An answer whose ID no call of ours can have is logged with what is wrong
// with it, not with an empty error.
func TestIDsAnswerWithAnIDWeNeverSend(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	logger := log.Logger()
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"ping": wiretest.Ping}, &acprpc.Options{Logger: logger})
	p.Send(`{"jsonrpc":"2.0","id":1.5,"result":"stray"}`)
	p.Send(`{"jsonrpc":"2.0","id":null,"result":"stray"}`)
	p.Request("1", "ping", "")
	p.ExpectResult(ctx, "1", `"pong"`)
	var warned []wiretest.Record
	for _, r := range log.Logged() {
		if r.Level == slog.LevelWarn {
			warned = append(warned, r)
		}
	}
	require.Len(t, warned, 2, "%v", log.Logged())
	for _, r := range warned {
		assert.NotEmpty(t, r.Attrs["error"], "%v", r)
	}
	assert.Contains(t, warned[0].Attrs["error"], "its id is neither a string nor an integer")
	assert.Contains(t, warned[1].Attrs["error"], "no id")
}

// IDs come back byte for byte: negatives, numbers above 2^53 that a float
// would round, strings with escapes, the extremes of int64.
func TestConnIDsByteForByte(t *testing.T) {
	ids := []string{`-1`, `9007199254740993`, `"x\u0041"`, `0`, `-9223372036854775808`,
		`9223372036854775807`, `""`, `"1"`, `"a\"b\\c\n"`, `"ü"`}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		_, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
			return req.ID.String(), nil
		}), nil)
		for _, id := range ids {
			p.Request(id, "x/id", "")
			m := p.ExpectAnswer(ctx, id)
			assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"result":`+strconv.Quote(id)+`}`, m.Raw)
		}
	})
}

// 1 and "1" are different requests: both run at once, and cancelling one
// leaves the other.
func TestConnNumberAndStringIDsAreDifferent(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		started := make(chan string, 2)
		release := make(chan struct{})
		c, p := wiretest.Connect(t, tr, acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
			started <- req.ID.String()
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-release:
				return "released " + req.ID.String(), nil
			}
		}), nil)
		p.Request(`1`, "x/wait", "")
		p.Request(`"1"`, "x/wait", "")
		got := map[string]bool{}
		for range 2 {
			got[wiretest.Recv(t, ctx, started)] = true
		}
		assert.Equal(t, map[string]bool{`1`: true, `"1"`: true}, got)
		assert.Equal(t, 2, c.Stats().IncomingInFlight)

		p.Cancel(`"1"`)
		p.ExpectError(ctx, `"1"`, acprpc.CodeRequestCancelled)
		assert.Equal(t, 1, c.Stats().IncomingInFlight)
		close(release)
		p.ExpectResult(ctx, `1`, `"released 1"`)
	})
}

// A second request with an ID still in flight gets -32600 with that ID; the
// first runs on untouched and is answered; then the ID is free again.
func TestConnDuplicateIDRejected(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		var calls atomic.Int32
		started := make(chan struct{}, 4)
		release := make(chan struct{})
		var firstCtx context.Context
		ctxSeen := make(chan context.Context, 4)
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/wait": func(ctx context.Context, req *acprpc.Request) (any, error) {
				calls.Add(1)
				ctxSeen <- ctx
				started <- struct{}{}
				<-release
				return json.RawMessage(req.Params), nil
			},
			"ping": wiretest.Ping,
		}, nil)
		p.Request("5", "x/wait", `{"n":"first"}`)
		wiretest.Recv(t, ctx, started)
		firstCtx = wiretest.Recv(t, ctx, ctxSeen)
		p.Request("5", "x/wait", `{"n":"second"}`)
		m := p.ExpectError(ctx, "5", acprpc.CodeInvalidRequest)
		assert.Contains(t, m.Error.Message, "in flight")
		assert.NoError(t, firstCtx.Err(), "the first request was disturbed")
		assert.EqualValues(t, 1, calls.Load())

		close(release)
		p.ExpectResult(ctx, "5", `{"n":"first"}`)
		p.Request("5", "x/wait", `{"n":"third"}`)
		p.ExpectResult(ctx, "5", `{"n":"third"}`)
	})
}

// TestIDKeyMatchesIDsAsTheConnDoes: the spellings of one ID share a key,
// a number and a string never do, and what no Conn carries has the zero
// key.
func TestIDKeyMatchesIDsAsTheConnDoes(t *testing.T) {
	key := func(msg string) acprpc.IDKey { return acprpc.ReadEnvelope([]byte(msg)).ID.Key() }
	answer := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":null}` }
	assert.Equal(t, acprpc.Int64ID(1).Key(), key(answer("1.0")))
	assert.Equal(t, key(answer("1")), key(answer("1e0")))
	assert.Equal(t, key(answer(`"a"`)), key(answer(`"\u0061"`)))
	assert.Equal(t, acprpc.StringID("a").Key(), key(answer(`"a"`)))
	assert.NotEqual(t, key(answer("1")), key(answer(`"1"`)))
	assert.NotEqual(t, key(answer("1")), key(answer("2")))
	assert.Equal(t, acprpc.IDKey{}, acprpc.ID{}.Key())
	assert.Equal(t, acprpc.IDKey{}, key(answer("null")))
	assert.NotEqual(t, acprpc.IDKey{}, acprpc.Int64ID(0).Key())
}
