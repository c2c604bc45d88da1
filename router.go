package acprpc

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
)

// Router is a Handler that serves each method with the Handler registered
// for it, so an application writes one function per method instead of a
// switch:
//
//	r := acprpc.NewRouter()
//	r.Register("session/prompt", acprpc.RequestHandler(agent.Prompt))
//	r.Register("session/cancel", acprpc.NotificationHandler(agent.Cancel))
//	conn := acprpc.NewConn(ctx, stream, r, nil)
//
// A method with no handler goes to the fallback (see SetFallback); without
// one, a request for it is answered -32601 and a notification of it is
// dropped. Registrations may change at any time, also while the router
// serves: an SDK can add the methods a peer's capabilities allow once
// initialize has told it, or remove them. Each message is served by the
// registrations as they stood when it arrived.
//
// The zero Router is empty and ready to use.
type Router struct {
	mu    sync.Mutex // serialises registrations; serving never takes it
	table atomic.Pointer[routeTable]
}

// routeTable is one immutable generation of a Router's registrations:
// serving reads it without locks, and every change replaces it whole.
type routeTable struct {
	methods  map[string]Handler
	fallback Handler
}

// NewRouter returns an empty Router.
func NewRouter() *Router { return &Router{} }

// Register serves method with h from now on, replacing any Handler
// registered for it. h receives the method's requests and its notifications
// alike; RequestHandler and NotificationHandler make handlers that take only
// their kind.
//
// A plain function is not a Handler: given one, the compiler says that it
// does not implement Handler ("missing method Handle"). Wrap it:
// HandlerFunc(f) for a func(ctx, *Request) (any, error), RequestHandler(f)
// for a typed func(ctx, P) (R, error), NotificationHandler(f) for a typed
// func(ctx, P).
//
// Register panics if method is empty, if h is nil, if method is
// $/cancel_request (which the connection consumes itself), or if h is a
// RequestHandler for a method starting with "$/" (the connection answers
// such requests -32601 before any handler could see them): each is a
// registration that could never serve anything.
func (r *Router) Register(method string, h Handler) {
	switch {
	case method == "":
		panic("acprpc: Router.Register with an empty method")
	case h == nil:
		panic("acprpc: Router.Register(" + method + ") with a nil Handler")
	case method == MethodCancelRequest:
		panic("acprpc: Router.Register(" + method + "): the connection handles cancellation itself")
	}
	if _, ok := h.(requestOnly); ok && strings.HasPrefix(method, "$/") {
		panic("acprpc: Router.Register(" + method + "): requests for $/ methods are answered -32601 by the connection")
	}
	r.update(func(t *routeTable) { t.methods[method] = h })
}

// Remove stops serving method; it then goes to the fallback like any other
// unknown method. Removing a method that is not registered does nothing.
func (r *Router) Remove(method string) {
	r.update(func(t *routeTable) { delete(t.methods, method) })
}

// SetFallback serves every method that has no handler of its own with h,
// requests and notifications alike: an SDK's extension methods, or a
// Handler written as a switch that the router is being introduced in front
// of. A nil h restores the default: -32601 for requests, notifications
// dropped.
func (r *Router) SetFallback(h Handler) {
	r.update(func(t *routeTable) { t.fallback = h })
}

// update applies change to a copy of the current table and publishes it.
func (r *Router) update(change func(*routeTable)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := &routeTable{methods: make(map[string]Handler)}
	if cur := r.table.Load(); cur != nil {
		next.methods, next.fallback = maps.Clone(cur.methods), cur.fallback
	}
	change(next)
	r.table.Store(next)
}

// Handle serves req with the Handler registered for its method, or the
// fallback, or answers -32601.
func (r *Router) Handle(ctx context.Context, req *Request) (any, error) {
	t := r.table.Load()
	if t == nil {
		return nil, MethodNotFound(req.Method)
	}
	if h, ok := t.methods[req.Method]; ok {
		return h.Handle(ctx, req)
	}
	if t.fallback != nil {
		return t.fallback.Handle(ctx, req)
	}
	return nil, MethodNotFound(req.Method)
}

// serves reports whether the router has a handler for method, its own or
// the fallback, as its registrations stand now.
func (r *Router) serves(_ *Conn, method string) bool {
	t := r.table.Load()
	if t == nil {
		return false
	}
	_, ok := t.methods[method]
	return ok || t.fallback != nil
}

// servingHandler is a Handler that can tell, before it is called, whether
// it serves a method: Router and VersionRouter.
type servingHandler interface {
	serves(c *Conn, method string) bool
}

// handlerServes reports whether h may serve method on c: false for a nil
// handler, or one that can tell and does not serve it, true for any other.
func handlerServes(h Handler, c *Conn, method string) bool {
	if h == nil {
		return false
	}
	if s, ok := h.(servingHandler); ok {
		return s.serves(c, method)
	}
	return true
}

// requestOnly marks the handlers RequestHandler makes, so that Register can
// refuse one for a method no request can reach.
type requestOnly interface {
	Handler
	requestOnly()
}

// RequestHandler adapts a typed function to a Handler for one request
// method. The request's params are decoded once into a P, which f receives,
// and f's R is the answer's result; an error is answered as any handler's
// error is (see the package documentation).
//
// Params that are absent or null are decoded as an empty object when P is a
// struct (JSON-RPC lets a request omit its params): a plain struct arrives
// at its zero value, with f checking what it requires, and the generated
// types of acpv1 and acpv2 refuse what their schema requires and is
// missing. Params that do not decode into a P are answered -32602 and f is
// not called. A P of type json.RawMessage receives the params exactly as
// they arrived (nil when absent), undecoded.
//
// A notification of the method does not call f: the peer expects no
// answer, so the work would be done for nobody. It is dropped, and the
// connection logs it at debug level.
func RequestHandler[P, R any](f func(ctx context.Context, params P) (R, error)) Handler {
	return requestFunc[P, R](f)
}

type requestFunc[P, R any] func(context.Context, P) (R, error)

func (f requestFunc[P, R]) requestOnly() {}

// Handle decodes the params and calls f.
func (f requestFunc[P, R]) Handle(ctx context.Context, req *Request) (any, error) {
	if req.IsNotification() {
		return nil, &Error{Code: CodeInvalidRequest,
			Message: "Invalid request: " + req.Method + " is a request, and came as a notification"}
	}
	var params P
	if err := decodeInto(req, &params); err != nil {
		return nil, err
	}
	result, err := f(ctx, params)
	if err != nil {
		return nil, err
	}
	return result, nil
}

// NotificationHandler adapts a typed function to a Handler for one
// notification method. The params are decoded once into a P, as for
// RequestHandler; params that do not decode are logged by the connection
// at debug level, and f is not called.
//
// A request for the method is answered -32601 without calling f: the
// method exists only as a notification.
func NotificationHandler[P any](f func(ctx context.Context, params P)) Handler {
	return notificationFunc[P](f)
}

type notificationFunc[P any] func(context.Context, P)

// Handle decodes the params and calls f.
func (f notificationFunc[P]) Handle(ctx context.Context, req *Request) (any, error) {
	if !req.IsNotification() {
		return nil, MethodNotFound(req.Method)
	}
	var params P
	if err := decodeInto(req, &params); err != nil {
		return nil, err
	}
	f(ctx, params)
	return nil, nil
}

// decodeInto decodes req's params into p, handing a *json.RawMessage the
// bytes as they are.
func decodeInto[P any](req *Request, p *P) error {
	if raw, ok := any(p).(*json.RawMessage); ok {
		*raw = req.Params
		return nil
	}
	return req.DecodeParams(p)
}

// CallFor calls method on the peer with params and returns the result
// decoded into an R. It is Conn.Call with the result as a return value:
//
//	perm, err := acprpc.CallFor[PermissionResponse](ctx, conn, "session/request_permission", ask)
//
// Errors are Call's; on an error the R is its zero value.
func CallFor[R any](ctx context.Context, c *Conn, method string, params any, opts ...CallOption) (R, error) {
	var result R
	if err := c.Call(ctx, method, params, &result, opts...); err != nil {
		return *new(R), err // not what a cancelled call may have decoded
	}
	return result, nil
}
