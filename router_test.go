package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

type promptParams struct {
	SessionID string `json:"sessionId"`
	Prompt    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"prompt"`
}

type promptResult struct {
	StopReason string `json:"stopReason"`
}

type sessionRef struct {
	SessionID string `json:"sessionId"`
}

// routerPeer serves r over os.Pipe with a scripted peer at the other end.
func routerPeer(t *testing.T, r *acprpc.Router) (*acprpc.Conn, *wiretest.Peer) {
	t.Helper()
	return wiretest.Connect(t, wiretest.Transports[0], r, nil)
}

// syncNote registers a notification that closes a channel when handled.
// Notifications are handled one at a time in arrival order, so once it has
// run, every notification sent before it has been handled too.
func syncNote(r *acprpc.Router) <-chan struct{} {
	done := make(chan struct{})
	r.Register("test/sync", acprpc.NotificationHandler(func(context.Context, json.RawMessage) { close(done) }))
	return done
}

// A typed request handler gets its params decoded and its result sent as
// the answer, with the request and connection still in its context.
func TestRouterTypedRequest(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	var conn *acprpc.Conn
	r.Register("session/prompt", acprpc.RequestHandler(func(ctx context.Context, p promptParams) (promptResult, error) {
		req, ok := acprpc.RequestFromContext(ctx)
		if !ok || req.ID.String() != "7" || acprpc.ConnFromContext(ctx) != conn {
			return promptResult{}, errors.New("the context lost the request or the connection")
		}
		return promptResult{StopReason: p.SessionID + ":" + p.Prompt[0].Text}, nil
	}))
	conn, p := routerPeer(t, r)
	p.Request("7", "session/prompt", `{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}`)
	p.ExpectResult(ctx, "7", `{"stopReason":"s1:hi"}`)
}

// Params that do not fit P are answered -32602 and the handler never runs;
// the connection serves the next request.
func TestRouterDecodeErrorIsInvalidParams(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	var calls atomic.Int32
	r.Register("session/prompt", acprpc.RequestHandler(func(_ context.Context, p promptParams) (promptResult, error) {
		calls.Add(1)
		return promptResult{StopReason: "end_turn"}, nil
	}))
	_, p := routerPeer(t, r)
	p.Request("1", "session/prompt", `{"sessionId":42}`)
	m := p.ExpectError(ctx, "1", acprpc.CodeInvalidParams)
	assert.Contains(t, m.Error.Message, "sessionId")
	p.Request("2", "session/prompt", `["positional"]`)
	p.ExpectError(ctx, "2", acprpc.CodeInvalidParams)
	p.Request("3", "session/prompt", `{"sessionId":"s"}`)
	p.ExpectResult(ctx, "3", `{"stopReason":"end_turn"}`)
	assert.Equal(t, int32(1), calls.Load(), "only the request that decoded reached the handler")
}

// Absent and null params give the handler the zero P, as an empty object
// does; a json.RawMessage P gets the params exactly as sent, nil when absent.
func TestRouterAbsentAndNullParams(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	r.Register("struct", acprpc.RequestHandler(func(_ context.Context, p sessionRef) (string, error) {
		return "sessionId=" + p.SessionID, nil
	}))
	r.Register("pointer", acprpc.RequestHandler(func(_ context.Context, p *sessionRef) (bool, error) {
		return p == nil, nil
	}))
	r.Register("raw", acprpc.RequestHandler(func(_ context.Context, p json.RawMessage) (string, error) {
		if p == nil {
			return "absent", nil
		}
		return string(p), nil
	}))
	_, p := routerPeer(t, r)
	for _, tc := range []struct{ id, method, params, want string }{
		{"1", "struct", "", `"sessionId="`},
		{"2", "struct", "null", `"sessionId="`},
		{"3", "struct", "{}", `"sessionId="`},
		{"4", "pointer", "", "true"},
		{"5", "pointer", "null", "true"},
		{"6", "pointer", `{"sessionId":"s"}`, "false"},
		{"7", "raw", "", `"absent"`},
		{"8", "raw", "null", `"null"`},
		{"9", "raw", `{"a": [1, 2]}`, `"{\"a\": [1, 2]}"`},
	} {
		p.Request(tc.id, tc.method, tc.params)
		p.ExpectResult(ctx, tc.id, tc.want)
	}
}

// DecodeParams reads params as json.Unmarshal reads them, with its errors,
// whether they were set by hand, valid or not, or read by a connection; a
// handler that changes the params it was given gets its own bytes decoded.
func TestDecodeParamsAsUnmarshal(t *testing.T) {
	cases := []string{
		`{"sessionId":"s","prompt":[{"type":"text","text":"caf\u00e9\n\"x\""}]}`, ` {"sessionId" : "s"} `,
		`{"sessionId":42}`, `{"sessionId":"s"`, `{"sessionId":"s"} x`, `[1]`, `{"SESSIONID":"folded"}`,
	}
	for _, params := range cases {
		var want, got promptParams
		wantErr := json.Unmarshal([]byte(params), &want)
		err := (&acprpc.Request{Params: json.RawMessage(params)}).DecodeParams(&got)
		if wantErr != nil {
			assert.EqualError(t, err, "jsonrpc error -32602: Invalid params: "+wantErr.Error(), params)
			continue
		}
		require.NoError(t, err, params)
		assert.Equal(t, want, got, params)
	}

	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	r.Register("read", acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
		var p promptParams
		err := req.DecodeParams(&p)
		return p.SessionID, err
	}))
	r.Register("changed", acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
		req.Params = req.Params[:len(req.Params)-1] // the same bytes, short of the closing brace
		var p promptParams
		return nil, req.DecodeParams(&p)
	}))
	_, p := routerPeer(t, r)
	p.Request("1", "read", cases[0])
	p.ExpectResult(ctx, "1", `"s"`)
	p.Request("2", "read", `{"sessionId":42}`)
	p.ExpectError(ctx, "2", acprpc.CodeInvalidParams)
	p.Request("3", "changed", `{"sessionId":"s"}`)
	m := p.ExpectError(ctx, "3", acprpc.CodeInvalidParams)
	assert.Contains(t, m.Error.Message, "unexpected end of JSON input")
}

// A typed handler's error is answered as any handler's: an *Error keeps its
// code and data, anything else is -32603.
func TestRouterHandlerErrors(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	r.Register("auth", acprpc.RequestHandler(func(context.Context, sessionRef) (struct{}, error) {
		return struct{}{}, fmt.Errorf("checking: %w", &acprpc.Error{Code: -32000, Message: "Authentication required", Data: json.RawMessage(`{"k":1}`)})
	}))
	r.Register("fail", acprpc.RequestHandler(func(context.Context, sessionRef) (struct{}, error) {
		return struct{}{}, errors.New("disk full")
	}))
	_, p := routerPeer(t, r)
	p.Request("1", "auth", `{}`)
	m := p.ExpectError(ctx, "1", -32000)
	assert.JSONEq(t, `{"k":1}`, string(m.Error.Data))
	p.Request("2", "fail", `{}`)
	m = p.ExpectError(ctx, "2", acprpc.CodeInternalError)
	assert.Equal(t, "disk full", m.Error.Message)
}

// An unregistered method is answered -32601 as a request and dropped as a
// notification; a removed method is unregistered.
func TestRouterUnknownMethods(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	r.Register("gone", acprpc.RequestHandler(func(context.Context, struct{}) (int, error) { return 1, nil }))
	synced := syncNote(r)
	_, p := routerPeer(t, r)
	p.Request("1", "gone", "")
	p.ExpectResult(ctx, "1", "1")
	r.Remove("gone")
	r.Remove("never-registered")
	p.Request("2", "gone", "")
	p.ExpectError(ctx, "2", acprpc.CodeMethodNotFound)
	p.Request("3", "nope/nothing", `{}`)
	m := p.ExpectError(ctx, "3", acprpc.CodeMethodNotFound)
	assert.Equal(t, "Method not found: nope/nothing", m.Error.Message)
	p.Notify("nope/nothing", `{}`)
	p.Notify("test/sync", "")
	wiretest.Recv(t, ctx, synced)
	p.Request("4", "nope/nothing", "")
	p.ExpectError(ctx, "4", acprpc.CodeMethodNotFound) // the notification was not answered: this is the next line
}

// The zero Router serves nothing: every request is -32601.
func TestRouterZeroValue(t *testing.T) {
	ctx := wiretest.Context(t)
	_, p := routerPeer(t, &acprpc.Router{})
	p.Request("1", "initialize", `{}`)
	p.ExpectError(ctx, "1", acprpc.CodeMethodNotFound)
}

// A notification of a request method does not run the request's handler,
// and is not answered; a request for a notification method is -32601.
func TestRouterKindMismatch(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	var prompted atomic.Int32
	r.Register("session/prompt", acprpc.RequestHandler(func(context.Context, promptParams) (promptResult, error) {
		prompted.Add(1)
		return promptResult{StopReason: "end_turn"}, nil
	}))
	cancels := make(chan string, 4)
	r.Register("session/cancel", acprpc.NotificationHandler(func(_ context.Context, p sessionRef) {
		cancels <- p.SessionID
	}))
	synced := syncNote(r)
	_, p := routerPeer(t, r)
	p.Notify("session/prompt", `{"sessionId":"s"}`)
	p.Request("1", "session/cancel", `{"sessionId":"s"}`)
	p.ExpectError(ctx, "1", acprpc.CodeMethodNotFound)
	p.Notify("session/cancel", `{"sessionId":"s2"}`)
	p.Notify("test/sync", "")
	wiretest.Recv(t, ctx, synced)
	assert.Zero(t, prompted.Load(), "a notification ran a request handler")
	require.Len(t, cancels, 1, "the request ran the notification handler")
	assert.Equal(t, "s2", <-cancels)
}

// A notification whose params do not decode does not call its handler, and
// the next one does.
func TestRouterNotificationDecodeError(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	got := make(chan string, 4)
	r.Register("note", acprpc.NotificationHandler(func(_ context.Context, p sessionRef) { got <- p.SessionID }))
	synced := syncNote(r)
	_, p := routerPeer(t, r)
	p.Notify("note", `{"sessionId":1}`)
	p.Notify("note", `{"sessionId":"ok"}`)
	p.Notify("test/sync", "")
	wiretest.Recv(t, ctx, synced)
	require.Len(t, got, 1)
	assert.Equal(t, "ok", <-got)
}

// A raw Handler registered for a method gets its requests and its
// notifications; the fallback gets every method without a handler, of both
// kinds, and nil restores -32601.
func TestRouterRawHandlerAndFallback(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	var mu sync.Mutex
	var seen []string
	record := func(who string) acprpc.HandlerFunc {
		return func(_ context.Context, req *acprpc.Request) (any, error) {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s %s notification=%v", who, req.Method, req.IsNotification()))
			mu.Unlock()
			return who, nil
		}
	}
	r.Register("raw", record("raw"))
	r.SetFallback(record("fallback"))
	synced := syncNote(r)
	_, p := routerPeer(t, r)
	p.Request("1", "raw", "")
	p.ExpectResult(ctx, "1", `"raw"`)
	p.Request("2", "_ext/thing", `{}`)
	p.ExpectResult(ctx, "2", `"fallback"`)
	p.Notify("raw", "")
	p.Notify("_ext/note", "")
	p.Notify("test/sync", "")
	wiretest.Recv(t, ctx, synced)
	r.SetFallback(nil)
	p.Request("3", "_ext/thing", `{}`)
	p.ExpectError(ctx, "3", acprpc.CodeMethodNotFound)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{
		"raw raw notification=false",
		"fallback _ext/thing notification=false",
		"raw raw notification=true",
		"fallback _ext/note notification=true",
	}, seen)
}

// Registrations that could never serve anything panic at once: the
// connection answers $/ requests itself and consumes $/cancel_request.
func TestRouterRegisterRefusesTheUnreachable(t *testing.T) {
	r := acprpc.NewRouter()
	typed := acprpc.RequestHandler(func(context.Context, struct{}) (int, error) { return 0, nil })
	assert.PanicsWithValue(t, "acprpc: Router.Register with an empty method", func() { r.Register("", typed) })
	assert.Panics(t, func() { r.Register("x", nil) })
	assert.Panics(t, func() { r.Register("$/ping", typed) })
	assert.Panics(t, func() { r.Register(acprpc.MethodCancelRequest, acprpc.HandlerFunc(wiretest.Ping)) })
	assert.NotPanics(t, func() {
		r.Register("$/progress", acprpc.NotificationHandler(func(context.Context, json.RawMessage) {}))
		r.Register("$/anything", acprpc.HandlerFunc(wiretest.Ping)) // its notifications reach it
	})
}

// A $/ notification reaches its handler; a $/ request is -32601 whatever is
// registered.
func TestRouterDollarMethods(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	progress := make(chan string, 1)
	r.Register("$/progress", acprpc.NotificationHandler(func(_ context.Context, p struct {
		Token string `json:"token"`
	}) {
		progress <- p.Token
	}))
	r.Register("$/raw", acprpc.HandlerFunc(wiretest.Ping))
	_, p := routerPeer(t, r)
	p.Notify("$/progress", `{"token":"t1"}`)
	assert.Equal(t, "t1", wiretest.Recv(t, ctx, progress))
	p.Request("1", "$/raw", "")
	p.ExpectError(ctx, "1", acprpc.CodeMethodNotFound)
}

// Registering and removing methods while the router serves is safe, and
// each request sees either registration, never a torn one.
func TestRouterRegisterWhileServing(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	_, p := routerPeer(t, r)
	const n = 200
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { // however the test ends: a failed wait must not leave it spinning
		close(stop)
		wg.Wait()
	}()
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			method := fmt.Sprintf("m%d", i%8)
			if i%3 == 0 {
				r.Remove(method)
			} else {
				r.Register(method, acprpc.HandlerFunc(wiretest.Ping))
			}
			runtime.Gosched() // leave the read loop its share of a busy machine
		}
	})
	for i := range n {
		p.Request(fmt.Sprint(i), fmt.Sprintf("m%d", i%8), "")
	}
	for _, m := range p.ExpectN(ctx, n) {
		if m.Error != nil {
			assert.Equal(t, int64(acprpc.CodeMethodNotFound), m.Code())
		} else {
			assert.JSONEq(t, `"pong"`, string(m.Result))
		}
	}
}

// CallFor returns the peer's result as a value; on an error the value is
// zero and the error is Call's.
func TestCallFor(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	type answer struct {
		err error
		res promptResult
	}
	done := make(chan answer, 1)
	go func() {
		res, err := acprpc.CallFor[promptResult](ctx, c, "session/prompt", sessionRef{SessionID: "s"})
		done <- answer{err, res}
	}()
	req := p.ExpectRequest(ctx, "session/prompt")
	assert.JSONEq(t, `{"sessionId":"s"}`, string(req.Params))
	p.Respond(string(req.ID), `{"stopReason":"end_turn"}`)
	a := wiretest.Recv(t, ctx, done)
	require.NoError(t, a.err)
	assert.Equal(t, promptResult{StopReason: "end_turn"}, a.res)

	go func() {
		res, err := acprpc.CallFor[promptResult](ctx, c, "session/prompt", nil)
		done <- answer{err, res}
	}()
	req = p.ExpectRequest(ctx, "session/prompt")
	p.RespondError(string(req.ID), -32002, "Resource not found")
	a = wiretest.Recv(t, ctx, done)
	var rpcErr *acprpc.Error
	require.ErrorAs(t, a.err, &rpcErr)
	assert.Equal(t, int64(-32002), rpcErr.Code)
	assert.Zero(t, a.res)

	go func() {
		res, err := acprpc.CallFor[promptResult](ctx, c, "session/prompt", nil)
		done <- answer{err, res}
	}()
	req = p.ExpectRequest(ctx, "session/prompt")
	p.Respond(string(req.ID), `{"stopReason":7}`)
	a = wiretest.Recv(t, ctx, done)
	require.ErrorContains(t, a.err, "cannot decode result")
	assert.Zero(t, a.res, "a result that did not decode is not half returned")
}

// Through a router, a cancelled turn is answered with the method's marker,
// and the session/cancel notification still reaches its typed handler,
// after the turn's context has ended.
func TestRouterCancellationStillWorks(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	turns := make(chan context.Context, 1)
	r.Register("session/prompt", acprpc.RequestHandler(func(ctx context.Context, p promptParams) (promptResult, error) {
		turns <- ctx
		<-ctx.Done()
		return promptResult{}, context.Cause(ctx)
	}))
	turnDoneFirst := make(chan error, 1)
	r.Register("session/cancel", acprpc.NotificationHandler(func(_ context.Context, p sessionRef) {
		turnDoneFirst <- context.Cause(<-turns)
	}))
	_, p := routerPeer(t, r)
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.Notify("session/cancel", `{"sessionId":"s"}`)
	p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, turnDoneFirst), acprpc.ErrSessionCancelled)
}
