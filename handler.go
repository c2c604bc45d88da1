package acprpc

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"

	"github.com/acpkit/acprpc/internal/acpjson"
	"github.com/acpkit/acprpc/internal/wire"
)

// Handler answers the peer's requests and receives its notifications.
//
// For a request, Handle's result is sent as the answer, or its error as an
// error answer (see the package documentation for which). Handle runs on a
// goroutine of its own, with a context that ends when the request is
// cancelled; it should return soon after. For a notification the result is
// ignored, and notifications are handled one at a time in arrival order.
//
// A function with Handle's signature is not a Handler itself: passing one
// where a Handler is wanted (NewConn, Router.Register) fails to compile
// with "missing method Handle". HandlerFunc(f) makes it one; RequestHandler
// and NotificationHandler make one of a typed function.
type Handler interface {
	Handle(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to a Handler: HandlerFunc(f) where a
// Handler is wanted, since f itself does not compile there ("missing method
// Handle").
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// Handle calls f(ctx, req).
func (f HandlerFunc) Handle(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

// Request is an incoming request or notification. Its fields are read-only
// and stay valid after the handler returns.
type Request struct {
	// ID is the request's ID as the peer sent it; zero for a notification.
	ID ID
	// Method is the method name.
	Method string
	// Params is the params member exactly as received, or nil.
	Params json.RawMessage
	// SessionID is params.sessionId when it is a string, which is how a
	// session cancellation finds the requests it ends.
	SessionID string

	// read is Params as the connection read them, valid JSON: while Params
	// are still those bytes, DecodeParams need not validate them again.
	read []byte
}

// IsNotification reports whether the peer expects no answer.
func (r *Request) IsNotification() bool { return r.ID.IsZero() }

// DecodeParams unmarshals the params into v. Its error is a -32602 *Error,
// so a handler can return it as is.
//
// Absent or null params are decoded into a struct as an empty object, so
// that the struct's own decoding decides what it requires: a plain struct
// is left at its zero value, and the generated ACP types refuse one whose
// schema requires members, naming the first missing, as the SDKs do. Into
// anything else (a pointer, a map, json.RawMessage) they decode as null.
func (r *Request) DecodeParams(v any) error {
	params, valid := r.paramsFor(v)
	if err := decodeJSON(params, v, valid); err != nil {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	return nil
}

// paramsFor returns the params to decode into v: the params as received,
// or in their absence an empty object for a struct and null otherwise; and
// whether they are known to be valid JSON.
func (r *Request) paramsFor(v any) (params []byte, valid bool) {
	if r.Params != nil && !bytes.Equal(bytes.TrimSpace(r.Params), nullParams) {
		return r.Params, len(r.Params) > 0 && len(r.read) == len(r.Params) && &r.read[0] == &r.Params[0]
	}
	if t := reflect.TypeOf(v); t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		return emptyParams, true
	}
	return nullParams, true
}

// decodeJSON decodes data into v with json.Unmarshal's result, in one pass
// over bytes that are valid JSON (valid says they are known to be, or the
// wire's scan finds them so): encoding/json would validate them in a pass
// of its own before decoding them, and scan a type's UnmarshalJSON's bytes
// once more to find their end.
func decodeJSON(data []byte, v any, valid bool) error {
	if valid || wire.Valid(data) {
		return acpjson.DecodeValid(data, v)
	}
	return json.Unmarshal(data, v)
}

var (
	nullParams  = []byte("null")
	emptyParams = []byte("{}")
)

// MethodNotFound is the error a handler returns for a method it does not
// serve; the peer gets -32601.
func MethodNotFound(method string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: "Method not found: " + method}
}

// The keys of the values the library's contexts carry. The values cost no
// allocations: a request's context is its in-flight entry, a
// notification's and a work's are their own structs, and each answers its
// keys in its Value method.
type contextKey int

const (
	requestKey   contextKey = iota // the *Request
	connKey                        // the *Conn
	noteKey                        // a notification's *noteContext
	inRequestKey                   // a request's *inRequest
	workKey                        // a v2 foreground work's *Work
)

// RequestFromContext returns the request a handler's context belongs to.
func RequestFromContext(ctx context.Context) (*Request, bool) {
	r, ok := ctx.Value(requestKey).(*Request)
	return r, ok
}

// ConnFromContext returns the Conn that delivered a handler's request or
// notification, so the handler can call the peer back. ctx is the context
// the handler was given (a Handler's, a Router's function's, an
// acpv1.Agent's or acpv1.Client's function's), or one derived from it.
//
// Given any other context it panics, saying so, rather than return a nil
// Conn that would panic later, far from the mistake: a context without a
// Conn is always a program's error, such as a handler's goroutine started
// with context.Background(). Outside a handler, use the *Conn that NewConn,
// agentproc.Start or remote.Dial returned.
func ConnFromContext(ctx context.Context) *Conn {
	c := connOf(ctx)
	if c == nil {
		panic("acprpc: ConnFromContext: ctx is not a handler's context (it carries no Conn): " +
			"pass the ctx the handler was given, or one derived from it; outside a handler, use the *Conn you made")
	}
	return c
}

// connOf returns the Conn a handler's context carries, or nil for any
// other context.
func connOf(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey).(*Conn)
	return c
}
