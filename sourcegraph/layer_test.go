package sourcegraph_test

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
	"github.com/acpkit/acprpc/sourcegraph"
)

// quiet keeps the engine's own log out of the test output.
var quiet = jsonrpc2.SetLogger(log.New(io.Discard, "", 0))

// serve runs h on sourcegraph's engine with a Layer, a scripted raw peer at
// the other end.
func serve(t *testing.T, h jsonrpc2.Handler, opts *sourcegraph.Options) *wiretest.Peer {
	t.Helper()
	rwc, p := wiretest.RawPipe(t) // the Peer's cleanup runs after the connection's
	conn := sourcegraph.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(rwc), h, opts, quiet)
	t.Cleanup(func() {
		_ = conn.Close()
		<-conn.DisconnectNotify()
	})
	return p
}

// mux serves methods by name; "ping" answers "pong", a sync point.
type mux map[string]func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request)

func (m mux) Handle(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
	if r.Method == "ping" {
		_ = c.Reply(ctx, r.ID, "pong")
		return
	}
	if h, ok := m[r.Method]; ok {
		h(ctx, c, r)
		return
	}
	if !r.Notif {
		_ = c.ReplyWithError(ctx, r.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "no " + r.Method})
	}
}

// untilCancelled replies, once its context has ended, with an error.
func untilCancelled(causes chan<- error) func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {
	return func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		_ = c.ReplyWithError(context.Background(), r.ID, &jsonrpc2.Error{Code: -32000, Message: "gave up"})
	}
}

// A cancel read right behind its request finds it: the context is
// registered before the handler runs, and the cancelled request is answered
// with its marker, or -32800, in place of the handler's error.
func TestCancelRightBehindRequest(t *testing.T) {
	ctx := wiretest.Context(t)
	causes := make(chan error, 2)
	p := serve(t, mux{"session/prompt": untilCancelled(causes), "slow": untilCancelled(causes)}, nil)
	p.SendRaw(wiretest.RequestLine("1", "session/prompt", `{"sessionId":"s","prompt":[]}`) + "\n" + wiretest.CancelLine("1") + "\n" +
		wiretest.RequestLine(`"two"`, "slow", `{}`) + "\n" + wiretest.CancelLine(`"two"`) + "\n")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrPeerCancelled)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrPeerCancelled)
	answers := p.ExpectByID(ctx, 2)
	assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(answers["1"].Result))
	assert.Equal(t, int64(acprpc.CodeRequestCancelled), answers[`"two"`].Code())
}

// Every request gets exactly one answer, whatever its handler does.
func TestExactlyOneAnswer(t *testing.T) {
	release := make(chan struct{})
	replied := make(chan error, 1)
	h := mux{
		"twice": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			_ = c.Reply(ctx, r.ID, "first")
			_ = c.Reply(ctx, r.ID, "second")
		},
		"never": func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {},
		"panics": func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {
			panic("boom")
		},
		"ignores its cancel": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			<-release
			replied <- c.Reply(context.Background(), r.ID, "late") // dropped: answered already
		},
		"plain error": jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) {
			return nil, errors.New("plain")
		}).Handle,
		"partial": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			<-ctx.Done()
			_ = c.Reply(context.Background(), r.ID, "partial") // a result after a cancel is a valid answer
		},
	}
	cases := []struct {
		method, cancel string
		want           func(t *testing.T, m wiretest.Msg)
	}{
		{"twice", "", func(t *testing.T, m wiretest.Msg) { assert.JSONEq(t, `"first"`, string(m.Result)) }},
		{"never", "", func(t *testing.T, m wiretest.Msg) {
			assert.Equal(t, int64(acprpc.CodeInternalError), m.Code())
			assert.Contains(t, m.Error.Message, "without replying")
		}},
		{"panics", "", func(t *testing.T, m wiretest.Msg) {
			assert.Equal(t, int64(acprpc.CodeInternalError), m.Code())
			assert.Contains(t, m.Error.Message, "boom")
		}},
		{"ignores its cancel", "cancel", func(t *testing.T, m wiretest.Msg) {
			assert.Equal(t, int64(acprpc.CodeRequestCancelled), m.Code())
		}},
		{"plain error", "", func(t *testing.T, m wiretest.Msg) {
			assert.Equal(t, int64(acprpc.CodeInternalError), m.Code(), "never code 0")
			assert.Equal(t, "plain", m.Error.Message)
		}},
		{"partial", "cancel", func(t *testing.T, m wiretest.Msg) { assert.JSONEq(t, `"partial"`, string(m.Result)) }},
	}
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			ctx := wiretest.Context(t)
			grace := 20 * time.Millisecond // "ignores its cancel" waits it out
			if tc.method == "partial" {
				grace = time.Minute // outlasted by no loaded machine: the handler's answer is the one
			}
			p := serve(t, h, &sourcegraph.Options{CancelGrace: grace})
			p.Request("1", tc.method, `{}`)
			if tc.cancel != "" {
				p.Cancel("1")
			}
			tc.want(t, p.ExpectAnswer(ctx, "1"))
			p.Request("2", "ping", `{}`)
			p.ExpectResult(ctx, "2", `"pong"`) // nothing came between: no second answer
			if tc.method == "ignores its cancel" {
				close(release)
				require.NoError(t, wiretest.Recv(t, ctx, replied), "a dropped answer is no error to the handler")
				p.Request("3", "ping", `{}`)
				p.ExpectResult(ctx, "3", `"pong"`) // the late reply never went out
			}
		})
	}
}

// $/ requests are -32601 without the handler; $/cancel_request never
// reaches it, for an unknown ID neither; other notifications reach it in
// arrival order, session/cancel included after it cancelled the session's
// requests.
func TestNotificationsAndDollarMethods(t *testing.T) {
	ctx := wiretest.Context(t)
	notes := make(chan string, 8)
	causes := make(chan error, 1)
	h := mux{
		"session/prompt": untilCancelled(causes),
	}
	note := func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) { notes <- r.Method }
	h["a"], h["b"], h["session/cancel"], h["$/progress"] = note, note, note, note
	p := serve(t, h, nil)
	p.Request("1", "$/anything", `{}`)
	p.ExpectError(ctx, "1", acprpc.CodeMethodNotFound)
	p.Request("2", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.Request("3", "session/prompt", `{"sessionId":"other","prompt":[]}`)
	p.Cancel("99")
	p.Notify("a", `{}`)
	p.Notify("$/progress", `{}`)
	p.Notify("b", `{}`)
	p.Notify("session/cancel", `{"sessionId":"s"}`)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrSessionCancelled)
	p.ExpectResult(ctx, "2", `{"stopReason":"cancelled"}`)
	for _, want := range []string{"a", "$/progress", "b", "session/cancel"} {
		assert.Equal(t, want, wiretest.Recv(t, ctx, notes))
	}
	p.Cancel("3")
	p.ExpectResult(ctx, "3", `{"stopReason":"cancelled"}`)
}

// A second request with an ID in flight is -32600, and the first keeps its
// own answer; LSP's $/cancelRequest cancels when asked to; -1 is the
// engine's 18446744073709551615, and a cancel for -1 still finds it.
func TestIDs(t *testing.T) {
	ctx := wiretest.Context(t)
	causes := make(chan error, 4)
	p := serve(t, mux{"slow": untilCancelled(causes)}, &sourcegraph.Options{AcceptLSPCancel: true})
	p.Request("1", "slow", `{}`)
	p.Request("1", "slow", `{}`)
	m := p.ExpectError(ctx, "1", acprpc.CodeInvalidRequest)
	assert.Contains(t, m.Error.Message, "already in flight")
	p.Notify("$/cancelRequest", `{"id":1}`)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrPeerCancelled)
	p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)

	p.Request("-1", "slow", `{}`)
	p.Cancel("-1")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrPeerCancelled)
	p.ExpectError(ctx, "18446744073709551615", acprpc.CodeRequestCancelled) // the engine's reading of -1
}

// The engine closes the connection on a line that is not JSON, before any
// wrapper sees it: one of the guarantees docs/embedding.md lists as the
// engine's to keep, checked here so the list stays true.
func TestEngineClosesOnBadLine(t *testing.T) {
	ctx := wiretest.Context(t)
	rwc, p := wiretest.RawPipe(t)
	conn := sourcegraph.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(rwc), mux{}, nil, quiet)
	t.Cleanup(func() { _ = conn.Close() })
	p.Send(`not json`)
	select {
	case <-conn.DisconnectNotify():
	case <-ctx.Done():
		t.Fatal("the engine read on after a line that is not JSON")
	}
}

// A handler wrapped in jsonrpc2.AsyncHandler, as programs on the engine
// often have it: requests are still registered before they run and
// answered by the handler's own reply, and notifications still run on
// goroutines of their own, so one can call the peer and wait for its
// answer, which the read goroutine reads meanwhile.
func TestAsyncHandler(t *testing.T) {
	ctx := wiretest.Context(t)
	causes := make(chan error, 1)
	called := make(chan error, 1)
	h := mux{
		"slow": untilCancelled(causes),
		"work": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			_ = c.Reply(ctx, r.ID, "done")
		},
		"note": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			called <- sourcegraph.Call(ctx, c, "peer/echo", nil, nil)
		},
		"alive": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			_ = c.Reply(ctx, r.ID, ctx.Err() == nil)
		},
	}
	p := serve(t, jsonrpc2.AsyncHandler(h), nil)
	p.SendRaw(wiretest.RequestLine("1", "slow", `{}`) + "\n" + wiretest.CancelLine("1") + "\n")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrPeerCancelled)
	p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
	// A session/cancel acts before the next message is read, even with the
	// handler's notifications on goroutines: the prompt right behind it is
	// not cancelled.
	p.SendRaw(wiretest.RequestLine("3", "slow", `{"sessionId":"s"}`) + "\n" +
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}` + "\n" +
		wiretest.RequestLine("4", "alive", `{"sessionId":"s"}`) + "\n")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrSessionCancelled)
	answers := p.ExpectByID(ctx, 2)
	assert.Equal(t, int64(acprpc.CodeRequestCancelled), answers["3"].Code())
	assert.JSONEq(t, `true`, string(answers["4"].Result), "the request after the session/cancel is not cancelled")
	p.Request("2", "work", `{}`)
	p.ExpectResult(ctx, "2", `"done"`)
	p.Notify("note", `{}`)
	echo := p.ExpectRequest(ctx, "peer/echo")
	p.Respond(string(echo.ID), `{}`)
	require.NoError(t, wiretest.Recv(t, ctx, called))
}

// lines is an io.Writer that hands each write to a channel.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	l <- string(p)
	return len(p), nil
}

// A Layer whose Handler serves a connection without its Stream cannot
// guard the answers, and says so as an error rather than failing in
// silence.
func TestHandlerWithoutStream(t *testing.T) {
	ctx := wiretest.Context(t)
	logged := make(lines, 4)
	rwc, p := wiretest.RawPipe(t)
	layer := sourcegraph.New(&sourcegraph.Options{Logger: slog.New(slog.NewTextHandler(logged, nil))})
	conn := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(rwc), layer.Handler(mux{}), quiet)
	t.Cleanup(func() {
		_ = conn.Close()
		<-conn.DisconnectNotify()
	})
	p.Request("1", "$/anything", `{}`)
	assert.Contains(t, wiretest.Recv(t, ctx, logged), "not the Layer's")
}

// Each request owns its entry: once a handler has replied, the peer may
// reuse its ID, and the handler's second reply and its return can touch
// only its own request, never the new one's. The new request's handler
// starts once the earlier one has returned, and its reply is the answer.
func TestReusedIDOwnsItsAnswer(t *testing.T) {
	ctx := wiretest.Context(t)
	releaseFirst, firstDone := make(chan struct{}), make(chan struct{})
	releaseSecond := make(chan struct{})
	p := serve(t, mux{
		"first": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			_ = c.Reply(ctx, r.ID, "first")
			<-releaseFirst
			_ = c.Reply(ctx, r.ID, "first again") // its second reply: dropped
			close(firstDone)
		},
		"second": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			<-releaseSecond
			_ = c.Reply(ctx, r.ID, "second")
		},
	}, nil)
	p.Request("1", "first", `{}`)
	p.ExpectResult(ctx, "1", `"first"`)
	p.Request("1", "second", `{}`) // the ID is free: its answer is out
	p.Request("2", "ping", `{}`)
	p.ExpectResult(ctx, "2", `"pong"`)
	close(releaseFirst)
	wiretest.Recv(t, ctx, firstDone)
	close(releaseSecond)
	p.ExpectResult(ctx, "1", `"second"`)
	p.Request("3", "ping", `{}`)
	p.ExpectResult(ctx, "3", `"pong"`)
}

// A handler that returns after its reply, once its ID has a new request,
// does not answer the new request for it ("returned without replying"):
// the new request is still in flight, and a cancel answers it.
func TestLateReturnLeavesTheReusedIDAlone(t *testing.T) {
	ctx := wiretest.Context(t)
	releaseFirst := make(chan struct{})
	causes := make(chan error, 1)
	p := serve(t, mux{
		"first": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			_ = c.Reply(ctx, r.ID, "first")
			<-releaseFirst
		},
		"second": untilCancelled(causes),
	}, nil)
	p.Request("1", "first", `{}`)
	p.ExpectResult(ctx, "1", `"first"`)
	p.Request("1", "second", `{}`)
	p.Request("2", "ping", `{}`)
	p.ExpectResult(ctx, "2", `"pong"`)
	close(releaseFirst)
	p.Request("3", "ping", `{}`)
	p.ExpectResult(ctx, "3", `"pong"`)
	p.Cancel("1")
	p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrPeerCancelled)
}

// A v1 session/close sent as a request, as ACP's schema and the TypeScript
// SDK send it, cancels the session's requests before it is served, and its
// handler starts once the prompt it cancelled has been answered, so the
// close's answer comes after the prompt's.
func TestSessionCloseRequestCancelsThePrompt(t *testing.T) {
	ctx := wiretest.Context(t)
	causes := make(chan error, 1)
	proceed := make(chan struct{})
	p := serve(t, mux{
		"session/prompt": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			<-proceed
			_ = c.ReplyWithError(context.Background(), r.ID, &jsonrpc2.Error{Code: -32000, Message: "stopped"})
		},
		"session/close": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			_ = c.Reply(ctx, r.ID, struct{}{})
		},
	}, nil)
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.Request("2", "ping", `{}`)
	p.ExpectResult(ctx, "2", `"pong"`)
	p.Request("3", "session/close", `{"sessionId":"s"}`)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrSessionCancelled)
	close(proceed)
	p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
	p.ExpectResult(ctx, "3", `{}`)
}

// The Layer files a request under params.sessionId read as the rest of the
// library reads it, by its exact name: a member spelled in another case is
// another member, so a session/cancel for the session the handler serves
// finds the prompt. The engine hands on params re-encoded with their names
// sorted, so "sessionid" comes after "sessionId" and "SESSIONID" before it.
func TestSessionIDIsReadByItsExactName(t *testing.T) {
	for _, other := range []string{"sessionid", "SESSIONID"} {
		t.Run(other, func(t *testing.T) {
			ctx := wiretest.Context(t)
			started := make(chan context.Context, 1)
			release := make(chan struct{})
			p := serve(t, mux{
				"session/prompt": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
					started <- ctx
					<-release // not its context: the ping's answer comes first
					_ = c.ReplyWithError(context.Background(), r.ID, &jsonrpc2.Error{Code: -32000, Message: "stopped"})
				},
			}, &sourcegraph.Options{CancelGrace: -1})
			p.Request("1", "session/prompt", `{"sessionId":"a","`+other+`":"b","prompt":[]}`)
			prompt := wiretest.Recv(t, ctx, started)
			p.Notify("session/cancel", `{"sessionId":"a"}`)
			p.Request("2", "ping", `{}`)
			p.ExpectResult(ctx, "2", `"pong"`) // the cancel was acted on before the ping was read
			assert.ErrorIs(t, context.Cause(prompt), acprpc.ErrSessionCancelled, "the session/cancel for a missed the prompt")
			p.Cancel("1") // cancels the prompt whether or not the session/cancel did
			p.Request("3", "ping", `{}`)
			p.ExpectResult(ctx, "3", `"pong"`)
			close(release)
			p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
		})
	}
}
