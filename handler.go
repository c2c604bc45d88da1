package acprpc

import (
	"context"
	"encoding/json"
)

// Handler answers the peer's requests and receives its notifications.
//
// For a request, Handle's result is sent as the answer, or its error as an
// error answer (see the package documentation for which). Handle runs on a
// goroutine of its own, with a context that ends when the request is
// cancelled; it should return soon after. For a notification the result is
// ignored, and notifications are handled one at a time in arrival order.
type Handler interface {
	Handle(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to a Handler.
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
}

// IsNotification reports whether the peer expects no answer.
func (r *Request) IsNotification() bool { return r.ID.IsZero() }

// nullParams is what DecodeParams decodes when a request has no params.
var nullParams = []byte("null")

// DecodeParams unmarshals the params into v. Its error is a -32602 *Error,
// so a handler can return it as is.
func (r *Request) DecodeParams(v any) error {
	params := r.Params
	if params == nil {
		params = nullParams
	}
	if err := json.Unmarshal(params, v); err != nil {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	return nil
}

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

// ConnFromContext returns the Conn that delivered a handler's request, so the
// handler can call the peer back.
func ConnFromContext(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey).(*Conn)
	return c
}
