package acprpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cancellation causes. A handler learns why its context ended with
// context.Cause(ctx) and errors.Is.
var (
	// ErrPeerCancelled: the peer sent $/cancel_request for the request.
	ErrPeerCancelled = errors.New("acprpc: cancelled by the peer")
	// ErrSessionCancelled: the request's session was cancelled, by the
	// peer's session/cancel or session/close, or by CancelSession here.
	ErrSessionCancelled = errors.New("acprpc: session cancelled")
	// ErrDeadline: Options.HandlerTimeout passed. It matches
	// context.DeadlineExceeded too.
	ErrDeadline error = deadlineError{}
	// ErrConnClosed: the connection closed, by Close, by Shutdown, by the
	// peer's end of input, by a write failure, or by NewConn's context
	// ending. A call that fails with it got no answer; no error the peer
	// sends matches it. The error a closed Conn gives (Err, and every Call
	// and Notify it ends or refuses) matches it and says who closed the
	// connection and why: "connection closed by this side (Close)", "... by
	// this side (Shutdown)", "... by the peer: its output ended: EOF",
	// "connection closed: a write to the peer failed: ...", "connection
	// closed: NewConn's context ended: ...".
	ErrConnClosed = errors.New("acprpc: connection closed")
	// ErrShutdown: this side is shutting the connection down gracefully
	// (Conn.Shutdown). The request is still answered, with its result, its
	// marker or -32800; a Call it cut short matches it too.
	ErrShutdown = errors.New("acprpc: connection shutting down")
)

type deadlineError struct{}

func (deadlineError) Error() string { return "acprpc: handler deadline exceeded" }
func (deadlineError) Unwrap() error { return context.DeadlineExceeded }

// statedError says text and matches each of errs: a reason worded as a
// whole, where fmt.Errorf would repeat each error's own words.
type statedError struct {
	text string
	errs []error
}

func (e statedError) Error() string   { return e.text }
func (e statedError) Unwrap() []error { return e.errs }

// ErrCancelled matches, with errors.Is, every error that means a request was
// cancelled: a Call whose context ended, and a -32800 answer from the peer.
// A handler returns it (or an error wrapping it) to have its request
// answered as cancelled: the method's marker, or -32800.
var ErrCancelled = errors.New("acprpc: request cancelled")

// ErrTooManyCalls is the reason Call fails when Options.MaxOutgoing calls
// already await their answers.
var ErrTooManyCalls = errors.New("acprpc: too many calls awaiting answers")

// Error is a JSON-RPC error object. A handler returns one (or an error
// wrapping one) to choose the code and data of its answer; Call returns one,
// wrapped in a *CallError, when the peer answers with an error.
//
// An SDK's own error type maps onto it without wrapping one: give the type
// an As method, as errors.As defines it, that sets a **Error from the
// type's code, message and data, and a handler's error of that type (or
// one wrapping it) is answered with exactly those. A code of 0 is answered
// -32603 instead, since no answer may carry it. docs/embedding.md shows
// the method.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// NewError returns an *Error with the given code and message and no data.
func NewError(code int64, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Error reports the code and message as the peer would read them.
func (e *Error) Error() string {
	return "jsonrpc error " + strconv.FormatInt(e.Code, 10) + ": " + e.Message
}

// Is makes a -32800 error match ErrCancelled.
func (e *Error) Is(target error) bool {
	return target == ErrCancelled && e.Code == CodeRequestCancelled
}

// errCancelledAnswer is the error object of every cancelled request that has
// no marker: the wording is ACP's, so peers can show it as is.
var errCancelledAnswer = &Error{Code: CodeRequestCancelled, Message: "Request cancelled"}

// CallError is what Call and Notify return when a message could not be
// completed: it names the method and the request ID, and wraps the reason,
// which is an *Error from the peer, a context error together with
// ErrCancelled, or ErrConnClosed.
type CallError struct {
	Method string
	ID     ID // zero for a notification or a call that was never sent
	Err    error
}

// Error says which call failed and why.
func (e *CallError) Error() string {
	// The reason's own "acprpc: " would say the package twice.
	why := strings.TrimPrefix(fmt.Sprint(e.Err), "acprpc: ")
	if e.ID.IsZero() { // a notification, or a call that never got an ID
		return fmt.Sprintf("acprpc: %s: %s", e.Method, why)
	}
	return fmt.Sprintf("acprpc: call %s (id %s): %s", e.Method, e.ID, why)
}

// Unwrap gives errors.Is and errors.As the reason.
func (e *CallError) Unwrap() error { return e.Err }

// cancelledCall is the reason of a Call whose context ended first: it is both
// the context's error and ErrCancelled, so callers may test either, and the
// peer's error answer when the call waited for it.
type cancelledCall struct {
	ctxErr error
	answer *Error
	// sent is which cancel the peer was sent ("$/cancel_request for request
	// 7", "session/cancel for session \"s\""), and waited how long the call
	// then waited for the answer, in vain: set when the wait ran out.
	sent   string
	waited time.Duration
}

func (e cancelledCall) Error() string {
	switch {
	case e.answer != nil:
		return "cancelled (" + e.ctxErr.Error() + "), peer answered: " + e.answer.Error()
	case e.waited > 0 && e.sent != "":
		return "cancelled (" + e.ctxErr.Error() + "): sent " + e.sent + ", and the peer had not answered " +
			e.waited.String() + " later, so its turn or work may still be running, and its late answer is dropped; " +
			"a peer that honours the cancel answers sooner: look at the peer's log, or wait longer (WaitAfterCancel)"
	case e.waited > 0:
		return "cancelled (" + e.ctxErr.Error() + "): no cancel could be sent, and the peer had not answered " +
			e.waited.String() + " later"
	}
	return "cancelled: " + e.ctxErr.Error()
}

// cancelledNotify is the reason a Notify whose context had ended sent
// nothing. It says how to send anyway, since an agent's last updates of a
// cancelled turn are the usual case: ACP asks for them before the answer.
func cancelledNotify(ctxErr error) error {
	return statedError{"not sent: its context is done (" + ctxErr.Error() + "); to send after a cancel, " +
		"as a cancelled turn's last session/update, pass context.WithoutCancel(ctx)", []error{ErrCancelled, ctxErr}}
}

func (e cancelledCall) Unwrap() []error {
	if e.answer != nil {
		return []error{ErrCancelled, e.ctxErr, e.answer}
	}
	return []error{ErrCancelled, e.ctxErr}
}

// answerFor turns a handler's error into the error object sent to the peer:
// an *Error of the handler's own is kept with its code and data, anything
// else becomes -32603 with the error's message, so no answer ever carries
// code 0. An *Error reached only through a *CallError is the peer's answer
// to a nested call, not this side's: passed on, the peer's -32601 for
// session/request_permission would say that session/prompt does not exist.
func answerFor(err error) *Error {
	if own := ownError(err); own != nil && own.Code != 0 {
		return own
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}

// ownError is errors.As for an *Error, except that it does not look inside
// a *CallError.
func ownError(err error) *Error {
	var own *Error
	ownCause(err, func(e error) bool {
		if x, ok := e.(*Error); ok {
			own = x
			return true
		}
		a, ok := e.(interface{ As(any) bool })
		return ok && a.As(&own)
	})
	return own
}

// saysCancelled reports whether a handler's error says that its request was
// cancelled: ErrCancelled, or a -32800 *Error, of the handler's own. One
// reached only through a *CallError is a nested call's cancellation, which
// is that call's news, not an answer for this request.
func saysCancelled(err error) bool {
	return ownCause(err, func(e error) bool {
		is, ok := e.(interface{ Is(error) bool })
		return e == ErrCancelled || ok && is.Is(ErrCancelled)
	}) != nil
}

// ownCause walks err's tree in the order errors.Is and errors.As do, except
// that it does not look inside a *CallError: what is reached only through
// one is the peer's answer to a nested call, not this side's. It returns
// the first error that match accepts, or nil.
func ownCause(err error, match func(error) bool) error {
	switch err.(type) {
	case nil, *CallError:
		return nil
	}
	if match(err) {
		return err
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return ownCause(u.Unwrap(), match)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if found := ownCause(e, match); found != nil {
				return found
			}
		}
	}
	return nil
}
