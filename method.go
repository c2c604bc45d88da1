package acprpc

import "context"

// Method is a request method together with the types of its params and its
// result: a value that knows its name, so that calling it and serving it
// need neither the name nor a type argument, and the compiler checks both
// sides against the same types. acpv1 and acpv2 declare one for each of
// ACP's requests (acpv1.ToAgent.SessionPrompt); an SDK declares its own for
// its extension methods:
//
//	var Echo = acprpc.Method[EchoParams, EchoResult]{Name: "_my/echo"}
//
//	res, err := Echo.Call(ctx, conn, EchoParams{Text: "hi"})
//	Echo.Handle(router, func(ctx context.Context, p EchoParams) (EchoResult, error) { ... })
//
// A Method is only a name with types: Call is CallFor and Handle is
// Router.Register with a RequestHandler, so the context, cancellation and
// answering rules are theirs.
type Method[P, R any] struct {
	Name string // the method's name on the wire, "session/prompt"
}

// Call calls the method on the peer with params and returns its result,
// as CallFor does: when ctx ends first the peer is sent $/cancel_request
// and the error matches ctx.Err() and ErrCancelled; an error answer is a
// *CallError wrapping the peer's *Error; a result that does not decode
// into an R is a *CallError saying so. On an error the R is its zero value.
func (m Method[P, R]) Call(ctx context.Context, c *Conn, params P, opts ...CallOption) (R, error) {
	return CallFor[R](ctx, c, m.Name, params, opts...)
}

// Handle serves the method's requests on r with f from now on, replacing
// any handler registered for it, as Router.Register does (and panics as it
// does).
func (m Method[P, R]) Handle(r *Router, f func(ctx context.Context, params P) (R, error)) {
	r.Register(m.Name, RequestHandler(f))
}

// Notification is a notification method together with the type of its
// params, as Method is for a request: acpv1.ToClient.SessionUpdate.
type Notification[P any] struct {
	Name string // the method's name on the wire, "session/update"
}

// Notify sends the notification to the peer, as Conn.Notify does.
func (n Notification[P]) Notify(ctx context.Context, c *Conn, params P) error {
	return c.Notify(ctx, n.Name, params)
}

// Handle serves the notification on r with f from now on, replacing any
// handler registered for it, as Router.Register does (and panics as it
// does).
func (n Notification[P]) Handle(r *Router, f func(ctx context.Context, params P)) {
	r.Register(n.Name, NotificationHandler(f))
}
