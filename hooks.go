package acprpc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/acpkit/acprpc/internal/wire"
)

// Hooks see every message a connection receives or sends, the ones the
// library builds itself included: cancellation markers and -32800 answers,
// -32601 for $/ methods, -32700 and -32600 for bad input, limit answers,
// initialize's negotiation errors, v2's entity cancels and idle
// state_updates, and the $/cancel_request notifications of cascading cancels.
// They observe and cannot change or drop a message, so no hook can break the
// exactly-once rule; build logging, metrics and tracing on them.
//
// Hooks run synchronously: Received on the read goroutine before the message
// is acted on, Sent just before the message is handed to the transport, on
// the goroutine that writes it (its sender's, or the writer goroutine's), so
// each sees its direction in wire order. A slow hook slows its direction
// down; it must not call the Conn's blocking methods. The zero value has no
// hooks and costs nothing.
type Hooks struct {
	// Received is called for every message taken from the transport. ctx is
	// the connection's context (the one given to NewConn, without its
	// cancellation).
	Received func(ctx context.Context, m *Message)

	// Sent is called for every message sent. ctx is the context the message
	// belongs to: the caller's for a Call or Notify and for the cancel that
	// Call sends, the handler's context for an answer (the request's own,
	// or what Options.HandlerContext made of it), the connection's context
	// for answers to bad input.
	Sent func(ctx context.Context, m *Message)

	// A hook that panics has its panic logged at error level, and the
	// message goes on as if the hook had returned: a hook runs on the
	// connection's own goroutines, where a panic would end the process.
}

// MessageKind says what a message is.
type MessageKind uint8

// The kinds of message a hook sees.
const (
	KindRequest      MessageKind = iota + 1 // a request, awaiting an answer
	KindNotification                        // a notification, never answered
	KindResult                              // a success answer
	KindError                               // an error answer
	KindInvalid                             // received only: not a usable message (answered, or too large)
)

var kindNames = [...]string{"", "request", "notification", "result", "error", "invalid"}

// String returns the kind's name, such as "request".
func (k MessageKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Message is what a hook sees of one message. It is valid only during the
// hook's call: copy Raw to keep it.
type Message struct {
	Kind MessageKind
	// ID is the request's ID, or the ID an answer carries; zero for
	// notifications and for answers to messages whose ID could not be read.
	ID ID
	// Method is the method of a request or notification, and of the request
	// an answer answers when the connection knows it.
	Method string
	// Error is the error of an error answer (decoded for a received one).
	Error *Error
	// Generated reports that the library built a sent message itself rather
	// than the application: a cancellation marker or -32800, an answer to
	// bad input, a limit, a $/ method, initialize's negotiation or an
	// entity cancel, an idle state_update, or a $/cancel_request.
	Generated bool
	// Raw is the message exactly as on the wire; for a message over the size
	// limit, which is not kept, its first bytes.
	Raw []byte
	// Size is the message's size in bytes, which for one over the size limit
	// is more than len(Raw).
	Size int
}

// frameInfo is what a frame records of itself for the Sent hook; it costs
// no allocation.
type frameInfo struct {
	kind      MessageKind
	method    string
	err       *Error
	generated bool
	ctx       context.Context
}

// message builds what the Sent hook sees of f.
func (f *frame) message() *Message {
	b := f.Buf.Bytes()
	return &Message{
		Kind:      f.info.kind,
		ID:        ID{raw: string(b[f.IDStart:f.IDEnd])},
		Method:    f.info.method,
		Error:     f.info.err,
		Generated: f.info.generated,
		Raw:       b,
		Size:      len(b),
	}
}

// guardHooks returns h with each hook made safe to call on the
// connection's own goroutines: a hook that panics has its panic logged,
// and the message goes on as if the hook had returned.
func (c *Conn) guardHooks(h Hooks) Hooks {
	guard := func(name string, hook func(context.Context, *Message)) func(context.Context, *Message) {
		if hook == nil {
			return nil
		}
		return func(ctx context.Context, m *Message) {
			defer func() {
				if p := recover(); p != nil {
					c.log.Error("acprpc: Hooks."+name+" panicked", "kind", m.Kind.String(), "method", m.Method,
						"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				}
			}()
			hook(ctx, m)
		}
	}
	return Hooks{Received: guard("Received", h.Received), Sent: guard("Sent", h.Sent)}
}

// received tells the Received hook about a message as parsed.
func (c *Conn) received(raw []byte, m *message, bad *wire.Problem) {
	msg := &Message{Kind: KindInvalid, Raw: raw, Size: len(raw)}
	if bad == nil {
		msg.Kind, msg.ID, msg.Method = kindOf(m), ID{raw: string(m.ID)}, m.Method
	}
	switch msg.Kind {
	case KindResult:
		msg.Method = c.calls.methodOf(m.ID)
	case KindError:
		msg.Method, msg.Error = c.calls.methodOf(m.ID), &Error{}
		if json.Unmarshal(m.Error, msg.Error) != nil {
			msg.Error = nil
		}
	}
	c.opts.Hooks.Received(c.base, msg)
}

// LogHooks returns Hooks that log every message at level l on logger, as a
// wire trace: direction, kind, ID, method, error code and size, and the
// message itself when the logger is enabled for slog.LevelDebug.
func LogHooks(logger *slog.Logger, l slog.Level) Hooks {
	log := func(dir string) func(context.Context, *Message) {
		return func(ctx context.Context, m *Message) {
			if !logger.Enabled(ctx, l) {
				return
			}
			attrs := []slog.Attr{slog.String("dir", dir), slog.String("kind", m.Kind.String()), slog.Int("size", m.Size)}
			if !m.ID.IsZero() {
				attrs = append(attrs, slog.String("id", m.ID.String()))
			}
			if m.Method != "" {
				attrs = append(attrs, slog.String("method", m.Method))
			}
			if m.Error != nil {
				attrs = append(attrs, slog.Int64("code", m.Error.Code))
			}
			if m.Generated {
				attrs = append(attrs, slog.Bool("generated", true))
			}
			if logger.Enabled(ctx, slog.LevelDebug) {
				attrs = append(attrs, slog.String("raw", string(m.Raw)))
			}
			logger.LogAttrs(ctx, l, "acprpc: "+dir, attrs...)
		}
	}
	return Hooks{Received: log("received"), Sent: log("sent")}
}
