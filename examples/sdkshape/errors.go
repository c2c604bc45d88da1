package sdkshape

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/acpkit/acprpc"
)

// RequestError is the SDK's error type: a JSON-RPC error with its data kept
// as a Go value.
type RequestError struct {
	Code    int
	Message string
	Data    any

	// peer is the failed call this error reports, when the peer answered it
	// so: such an error is news about a call, not this side's answer.
	peer error
}

// Error reports the code and message, and for a failed call which call it
// was.
func (e *RequestError) Error() string {
	if e.peer != nil {
		return e.peer.Error()
	}
	return fmt.Sprintf("acp error %d: %s", e.Code, e.Message)
}

// As maps the error onto acprpc's, which is how a handler's RequestError
// becomes its answer: the code, the message and the data as they are. A
// RequestError that reports a peer's answer to a call declines, so that a
// handler returning it unchanged is answered -32603 naming the failed call
// rather than with the peer's code, which would say something false about
// this request (a -32601 from the client for session/request_permission
// would tell it that session/prompt does not exist). A handler that means to
// pass the code on makes a RequestError of its own with it.
func (e *RequestError) As(target any) bool {
	t, ok := target.(**acprpc.Error)
	if !ok || e.peer != nil {
		return false
	}
	out := &acprpc.Error{Code: int64(e.Code), Message: e.Message}
	if e.Data != nil {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return false
		}
		out.Data = data
	}
	*t = out
	return true
}

// Unwrap gives errors.Is and errors.As the failed call of an error the peer
// answered, and through it acprpc's causes (acprpc.ErrCancelled,
// acprpc.ErrConnClosed, the peer's *acprpc.Error).
func (e *RequestError) Unwrap() error { return e.peer }

// NewMethodNotFound says the handler does not serve method.
func NewMethodNotFound(method string) *RequestError {
	return &RequestError{Code: acprpc.CodeMethodNotFound, Message: "Method not found", Data: map[string]string{"method": method}}
}

// NewInvalidParams says the params do not fit the method.
func NewInvalidParams(data any) *RequestError {
	return &RequestError{Code: acprpc.CodeInvalidParams, Message: "Invalid params", Data: data}
}

// NewInternalError says the handler failed.
func NewInternalError(data any) *RequestError {
	return &RequestError{Code: acprpc.CodeInternalError, Message: "Internal error", Data: data}
}

// NewRequestCancelled says the handler gave up on a cancelled request; the
// peer gets the method's cancellation marker or -32800.
func NewRequestCancelled() *RequestError {
	return &RequestError{Code: acprpc.CodeRequestCancelled, Message: "Request cancelled"}
}

// NewAuthRequired is ACP's -32000.
func NewAuthRequired(data any) *RequestError {
	return &RequestError{Code: -32000, Message: "Authentication required", Data: data}
}

// fromCall turns the error of an acprpc call into the SDK's: the peer's
// code, message and data when it answered with an error, -32800 when the
// call was cancelled, -32603 otherwise; the call's error stays inside.
func fromCall(err error) error {
	if err == nil {
		return nil
	}
	out := &RequestError{Code: acprpc.CodeInternalError, Message: err.Error(), peer: err}
	var rpcErr *acprpc.Error
	switch {
	case errors.Is(err, acprpc.ErrCancelled):
		out.Code, out.Message = acprpc.CodeRequestCancelled, "Request cancelled"
	case errors.As(err, &rpcErr):
		out.Code, out.Message = int(rpcErr.Code), rpcErr.Message
		if len(rpcErr.Data) > 0 {
			_ = json.Unmarshal(rpcErr.Data, &out.Data)
		}
	}
	return out
}
