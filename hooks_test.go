package acprpc_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// hookLog records what the hooks saw, in order, for each direction.
type hookLog struct {
	mu             sync.Mutex
	received, sent []hookEvent
	ctxOK          bool
}

type hookEvent struct {
	kind      acprpc.MessageKind
	id        string
	method    string
	code      int64
	generated bool
	raw       string
}

func newHookLog() *hookLog { return &hookLog{ctxOK: true} }

func event(m *acprpc.Message) hookEvent {
	e := hookEvent{kind: m.Kind, id: m.ID.String(), method: m.Method, generated: m.Generated, raw: string(m.Raw)}
	if m.Error != nil {
		e.code = m.Error.Code
	}
	return e
}

func (l *hookLog) hooks() acprpc.Hooks {
	return acprpc.Hooks{
		Received: func(ctx context.Context, m *acprpc.Message) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.ctxOK = l.ctxOK && ctx != nil
			l.received = append(l.received, event(m))
		},
		Sent: func(ctx context.Context, m *acprpc.Message) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.ctxOK = l.ctxOK && ctx != nil
			l.sent = append(l.sent, event(m))
		},
	}
}

func (l *hookLog) snapshot() (received, sent []hookEvent, ctxOK bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]hookEvent(nil), l.received...), append([]hookEvent(nil), l.sent...), l.ctxOK
}

// TestHooksSeeEveryMessage runs a conversation with every kind of answer the
// library builds itself, and checks that Sent saw exactly the lines the peer
// read, in order, and Received exactly the lines the peer wrote.
func TestHooksSeeEveryMessage(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		log := newHookLog()
		mux := wiretest.Mux{"echo": wiretest.Echo, "block": wiretest.Hold(nil), "session/prompt": wiretest.Hold(nil)}
		conn, p := wiretest.Connect(t, tr, mux, &acprpc.Options{Hooks: log.hooks(), MaxMessageSize: 128})
		ctx := wiretest.Context(t)

		var wrote []string
		send := func(line string) { wrote = append(wrote, line); p.Send(line) }

		send(wiretest.RequestLine(`1`, "echo", `{"a":1}`))
		send(wiretest.RequestLine(`"p"`, "session/prompt", `{"sessionId":"s"}`))
		send(wiretest.CancelLine(`"p"`))
		send(wiretest.RequestLine(`2`, "$/ping", ""))
		send(`not json`)
		long := wiretest.RequestLine(`3`, "echo", `{"pad":"`+strings.Repeat("x", 200)+`"}`)
		send(long)

		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		callDone := make(chan error, 1)
		go func() { callDone <- conn.Call(callCtx, "fs/read_text_file", map[string]string{"path": "/x"}, nil) }()

		var read []wiretest.Msg
		for len(read) < 7 { // five answers, the call and its cancel
			m := p.Expect(ctx)
			read = append(read, m)
			if m.IsRequest() {
				cancel()
			}
		}
		require.Error(t, <-callDone)
		reqID := ""
		for _, m := range read {
			if m.IsRequest() {
				reqID = string(m.ID)
			}
		}
		require.NotEmpty(t, reqID)
		send(`{"jsonrpc":"2.0","id":` + reqID + `,"error":{"code":-32601,"message":"no such method"}}`)
		send(wiretest.RequestLine(`9`, "echo", `{}`)) // a sync point: its answer comes after every hook above
		read = append(read, p.ExpectAnswer(ctx, `9`))

		received, sent, ctxOK := log.snapshot()
		assert.True(t, ctxOK, "every hook gets a context")
		require.Len(t, received, len(wrote))
		for i, line := range wrote {
			if len(line) <= 128 {
				assert.Equal(t, line, received[i].raw, "received %d", i)
			} else {
				assert.True(t, strings.HasPrefix(line, received[i].raw), "an over-long line is seen by its first bytes")
				assert.Equal(t, acprpc.KindInvalid, received[i].kind)
			}
		}
		assert.Equal(t, hookEvent{kind: acprpc.KindRequest, id: `1`, method: "echo", raw: wrote[0]}, received[0])
		assert.Equal(t, acprpc.KindNotification, received[2].kind)
		assert.Equal(t, acprpc.MethodCancelRequest, received[2].method)
		assert.Equal(t, acprpc.KindInvalid, received[4].kind)
		assert.Equal(t, hookEvent{kind: acprpc.KindError, id: reqID, method: "fs/read_text_file", code: -32601, raw: wrote[6]}, received[6])

		require.Len(t, sent, len(read), "sent %v, read %v", sent, read)
		byRaw := map[string]hookEvent{}
		for i, m := range read {
			assert.Equal(t, m.Raw, sent[i].raw, "sent %d in wire order", i)
			byRaw[m.Raw] = sent[i]
		}
		for _, m := range read {
			e := byRaw[m.Raw]
			switch {
			case m.IsRequest():
				assert.Equal(t, acprpc.KindRequest, e.kind)
				assert.Equal(t, "fs/read_text_file", e.method)
				assert.False(t, e.generated)
			case m.IsNotification():
				assert.Equal(t, acprpc.MethodCancelRequest, e.method)
				assert.True(t, e.generated, "the cascade's cancel is the library's")
			case string(m.ID) == `1` || string(m.ID) == `9`:
				assert.Equal(t, hookEvent{kind: acprpc.KindResult, id: string(m.ID), method: "echo", raw: m.Raw}, e)
			case string(m.ID) == `"p"`:
				assert.Equal(t, hookEvent{kind: acprpc.KindResult, id: `"p"`, method: "session/prompt", generated: true, raw: m.Raw}, e, "the marker")
			case string(m.ID) == `2`:
				assert.Equal(t, int64(acprpc.CodeMethodNotFound), e.code)
				assert.True(t, e.generated)
				assert.Equal(t, "$/ping", e.method)
			case m.Code() == acprpc.CodeParseError || string(m.ID) == `3`:
				assert.Equal(t, acprpc.KindError, e.kind)
				assert.True(t, e.generated)
			default:
				t.Errorf("unexpected line %s", m.Raw)
			}
		}
	})
}

// TestHooksContexts: an answer's hook gets the request's context, a call's
// the caller's.
func TestHooksContexts(t *testing.T) {
	type key struct{}
	seen := make(chan any, 4)
	hooks := acprpc.Hooks{Sent: func(ctx context.Context, m *acprpc.Message) {
		if m.Kind == acprpc.KindResult {
			req, _ := acprpc.RequestFromContext(ctx)
			seen <- req.Method
		}
		if m.Kind == acprpc.KindRequest {
			seen <- ctx.Value(key{})
		}
	}}
	conn, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"echo": wiretest.Echo}, &acprpc.Options{Hooks: hooks})
	ctx := wiretest.Context(t)
	p.Request(`1`, "echo", `{}`)
	p.ExpectAnswer(ctx, `1`)
	assert.Equal(t, "echo", <-seen)

	done := make(chan error, 1)
	go func() { done <- conn.Call(context.WithValue(ctx, key{}, "mine"), "ping", nil, nil) }()
	req := p.ExpectRequest(ctx, "ping")
	assert.Equal(t, "mine", <-seen)
	p.Respond(string(req.ID), `"pong"`)
	require.NoError(t, <-done)
}

// TestLogHooks writes a wire trace through slog.
func TestLogHooks(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	logger := newJSONLogger(&lockedWriter{w: &buf, mu: &mu})
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"echo": wiretest.Echo},
		&acprpc.Options{Hooks: acprpc.LogHooks(logger, slogInfo)})
	ctx := wiretest.Context(t)
	p.Request(`7`, "echo", `{"x":1}`)
	p.ExpectAnswer(ctx, `7`)
	mu.Lock()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	mu.Unlock()
	require.GreaterOrEqual(t, len(lines), 1)
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	assert.Equal(t, "received", first["dir"])
	assert.Equal(t, "request", first["kind"])
	assert.Equal(t, "7", first["id"])
	assert.Equal(t, "echo", first["method"])
}

// TestHooksLabelAnswersOfTheReadGoroutine: the answers the library builds on
// the read goroutine, initialize's negotiation and v2's entity cancels, reach
// Sent labelled as the library's, with the method they answer; so does the
// idle state_update the layer writes for a work.
func TestHooksLabelAnswersOfTheReadGoroutine(t *testing.T) {
	ctx := wiretest.Context(t)
	log := newHookLog()
	initialize := func(context.Context, *acprpc.Request) (any, error) {
		return json.RawMessage(`{"protocolVersion":2}`), nil
	}
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"initialize": initialize},
		&acprpc.Options{Hooks: log.hooks(), SupportedVersions: []acprpc.ProtocolVersion{acprpc.ProtocolV1, acprpc.ProtocolV2}})
	_, done := c.CancellableToolCall(context.Background(), "s", "t1")
	defer done()

	p.Request("1", "initialize", `{"protocolVersion":"two"}`)
	p.ExpectError(ctx, "1", acprpc.CodeInvalidParams)
	p.Request("2", "initialize", `{"protocolVersion":0}`)
	p.ExpectError(ctx, "2", acprpc.CodeUnsupportedProtocolVersion)
	p.Request("3", "initialize", `{"protocolVersion":2}`)
	p.ExpectResult(ctx, "3", `{"protocolVersion":2}`)
	p.Request("4", "initialize", `{"protocolVersion":1}`) // one connection, one version
	p.ExpectError(ctx, "4", acprpc.CodeInvalidRequest)
	p.Request("5", "tool_call/cancel", `{"sessionId":"s"}`)
	p.ExpectError(ctx, "5", acprpc.CodeInvalidParams)
	p.Request("6", "tool_call/cancel", `{"sessionId":"s","toolCallId":"t1"}`)
	p.ExpectResult(ctx, "6", `{}`)
	p.Request("7", "terminal/cancel", `{"terminalId":"x"}`)
	p.ExpectError(ctx, "7", acprpc.CodeInvalidParams)
	require.NoError(t, c.BeginWork("s").End("end_turn")) // the idle state_update is the layer's too
	p.ExpectNotification(ctx, "session/update")

	_, sent, _ := log.snapshot()
	require.Len(t, sent, 8)
	methods := []string{"initialize", "initialize", "initialize", "initialize",
		"tool_call/cancel", "tool_call/cancel", "terminal/cancel", "session/update"}
	for i, e := range sent {
		assert.Equal(t, methods[i], e.method, "message %d, %s", i, e.raw)
		assert.Equal(t, e.id != "3", e.generated, "message %d, %s: only the handler's own answer is not the library's", i, e.raw)
	}
}

const slogInfo = slog.LevelInfo

func newJSONLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

// lockedWriter serialises writes to w, which the read and writer goroutines
// both log to.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// A hook or Options.HandlerContext that panics runs on the connection's own
// goroutines: the panic is logged, the message goes on as if it had
// returned (the handler gets the request's own context), and the process
// and the connection live on.
func TestPanickingHooksAndHandlerContextAreRecovered(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	boom := func(context.Context, *acprpc.Message) { panic("hook boom") }
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		got, ok := acprpc.RequestFromContext(ctx)
		require.True(t, ok)
		return got.Method, nil
	})
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{
		Logger: log.Logger(),
		Hooks:  acprpc.Hooks{Received: boom, Sent: boom},
		HandlerContext: func(context.Context, *acprpc.Request) context.Context {
			panic("context boom")
		},
	})
	p.Request("1", "x/one", "")
	p.ExpectResult(ctx, "1", `"x/one"`)
	p.Request("2", "x/two", "")
	p.ExpectResult(ctx, "2", `"x/two"`)
	var panics []string
	for _, r := range log.Logged() {
		if strings.Contains(r.Message, "panicked") {
			panics = append(panics, r.Message)
		}
	}
	assert.Contains(t, panics, "acprpc: Hooks.Received panicked")
	assert.Contains(t, panics, "acprpc: Hooks.Sent panicked")
	assert.Contains(t, panics, "acprpc: Options.HandlerContext panicked; using the request's context")
}
