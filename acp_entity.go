package acprpc

import (
	"context"
	"errors"
	"sync"

	"github.com/acpkit/acprpc/internal/wire"
)

// ErrEntityCancelled: the peer sent tool_call/cancel or terminal/cancel for
// the tool call or terminal a context was registered for.
var ErrEntityCancelled = errors.New("acprpc: tool call or terminal cancelled by the peer")

// entityKey names one tool call or terminal: the cancel method that reaches
// it, its session and its ID.
type entityKey struct {
	method, sessionID, id string
}

// entityTable holds the tool calls and terminals the application has made
// cancellable.
type entityTable struct {
	mu sync.Mutex // protects m
	m  map[entityKey]*entity
}

type entity struct {
	cancel context.CancelCauseFunc
}

// CancellableToolCall makes a tool call of a session cancellable by the
// peer's tool_call/cancel on an ACP v2 connection. It returns a context
// derived from parent that the request cancels with cause
// ErrEntityCancelled, and a function to call once the tool call is final.
// Until then a tool_call/cancel for it is answered at once with an empty
// result (the cancellation is accepted; the tool_call_update with its final
// status is the application's to send); after it, or for a tool call never
// registered, the request goes to the handler, and is answered -32602 when
// the handler does not serve the method. The tool call must advertise
// capabilities.cancel to the peer for it to send the request. Calling done
// more than once is safe; it also releases the context.
func (c *Conn) CancellableToolCall(parent context.Context, sessionID, toolCallID string) (ctx context.Context, done func()) {
	return c.cancellable(parent, entityKey{methodToolCallCancel, sessionID, toolCallID})
}

// CancellableTerminal makes a terminal of a session cancellable by the
// peer's terminal/cancel, as CancellableToolCall does for a tool call. The
// terminal_update with its exitStatus is the application's to send; done
// marks the terminal as exited.
func (c *Conn) CancellableTerminal(parent context.Context, sessionID, terminalID string) (ctx context.Context, done func()) {
	return c.cancellable(parent, entityKey{methodTerminalCancel, sessionID, terminalID})
}

func (c *Conn) cancellable(parent context.Context, k entityKey) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	e := &entity{cancel: cancel}
	t := &c.acp.entities
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[entityKey]*entity)
	}
	t.m[k] = e
	t.mu.Unlock()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			t.mu.Lock()
			if t.m[k] == e {
				delete(t.m, k)
			}
			t.mu.Unlock()
			cancel(context.Canceled)
		})
	}
}

// onEntityCancel handles tool_call/cancel and terminal/cancel on the read
// goroutine, ahead of every queue, as $/cancel_request is handled: a
// registered entity is cancelled and the request answered at once. It
// reports false for an entity that is not registered, which the handler
// then serves.
func (c *Conn) onEntityCancel(m *message) bool {
	field := "toolCallId"
	if m.Method == methodTerminalCancel {
		field = "terminalId"
	}
	raw := wire.Member(m.Params, field)
	if len(raw) == 0 || raw[0] != '"' || m.Scope == "" {
		c.refuse(m, &Error{Code: CodeInvalidParams,
			Message: "Invalid params: " + m.Method + " needs a string sessionId and " + field})
		return true
	}
	k := entityKey{m.Method, m.Scope, wire.Unquote(raw)}
	c.acp.entities.mu.Lock()
	e := c.acp.entities.m[k]
	c.acp.entities.mu.Unlock()
	if e == nil {
		if c.handler == nil {
			c.refuse(m, unknownEntity(m.Method))
			return true
		}
		return false
	}
	e.cancel(ErrEntityCancelled)
	f, _ := resultFrame(m.ID, emptyResult{})
	c.replyOwn(m.Method, f)
	return true
}

type emptyResult struct{}

// unknownEntity is the answer to an entity cancel for an entity that is
// unknown, final or not cancellable.
func unknownEntity(method string) *Error {
	what := "tool call"
	if method == methodTerminalCancel {
		what = "terminal"
	}
	return &Error{Code: CodeInvalidParams, Message: "Invalid params: the " + what + " is unknown, final or not cancellable"}
}
