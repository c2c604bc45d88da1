package sourcegraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wire"
)

// Options configure a Layer; the zero value (or nil) is ready for ACP.
type Options struct {
	// Logger receives the Layer's diagnostics: dropped second answers,
	// panics, malformed cancels. Nil is silent.
	Logger *slog.Logger

	// CancelGrace is how long a cancelled request's handler may take to
	// reply before the request is answered for it. Zero means
	// acprpc.DefaultCancelGrace; a negative value waits for the handler.
	CancelGrace time.Duration

	// CancelMarkers maps a method to the result that answers it when it is
	// cancelled, instead of -32800. Nil means ACP v1's
	// (acprpc.ACPCancelMarkers(acprpc.ProtocolV1)); an empty map means none.
	CancelMarkers map[string]json.RawMessage

	// SessionCancelMethods are the methods that cancel every request in
	// flight whose params.sessionId names their session; they still reach
	// the handler. Sent as a request (session/close, in ACP's schemas), the
	// method's handler starts once each request it cancelled is answered,
	// so its answer comes after theirs. Nil means ACP's session/cancel and
	// session/close; an empty non-nil slice turns session cancellation off.
	SessionCancelMethods []string

	// InputEndGrace is how long, once the peer's input has ended, the
	// requests read before the end are given to be answered by their
	// handlers; each still unanswered then is answered as cancelled, its
	// context ending, before the engine sees the end and closes. Zero or
	// less means acprpc.DefaultInputEndGrace.
	InputEndGrace time.Duration

	// AcceptLSPCancel also honours LSP's $/cancelRequest with {"id": ...}.
	AcceptLSPCancel bool
}

// Layer is acprpc's cancellation for one *jsonrpc2.Conn: the table of its
// incoming requests in flight, shared by the Handler that registers them and
// the Stream that sees their answers go out. Make one per connection.
type Layer struct {
	opts Options
	log  *slog.Logger

	mu sync.Mutex // protects byID and the requests' fields marked so
	// byID holds, for each ID, the newest request that uses it: one not yet
	// answered, or one whose handler has not returned. An answer the engine
	// writes under an ID belongs to that request once its handler runs, and
	// to an earlier one, answered already, before.
	byID map[jsonrpc2.ID]*request

	writeMu sync.Mutex // one write at a time: the engine's and the Layer's own
	stream  jsonrpc2.ObjectStream

	closed    chan struct{} // closed once the engine closes the stream
	closeOnce sync.Once

	// afterFunc arms a grace timer: time.AfterFunc, or a test's stand-in
	// that fires the timer when the test says.
	afterFunc func(time.Duration, func()) *time.Timer
}

// request is an incoming request, from its registration until it is both
// answered and its handler has returned.
type request struct {
	id        jsonrpc2.ID
	method    string
	sessionID string
	ctx       context.Context
	cancel    context.CancelCauseFunc
	// prev is the request that held the ID before, answered already, whose
	// handler must return before this one's starts: until then, what the
	// engine writes under the ID is that handler's.
	prev *request
	// closing: for a session/close, the requests it cancelled, whose answers
	// go out before its handler starts.
	closing  []*request
	returned chan struct{} // closed once the handler has returned
	sent     chan struct{} // closed once the one answer has been written
	cause    error         // the first cancellation cause; under Layer.mu
	grace    *time.Timer   // answers for a handler that outlives its grace; under Layer.mu
	started  bool          // the handler runs; under Layer.mu
	answered bool          // the one answer is claimed; under Layer.mu
	over     bool          // the handler has returned; under Layer.mu
}

// errAnswered ends a request's context once it is answered.
var errAnswered = errors.New("sourcegraph: request answered")

// New returns a Layer; give its Stream and its Handler to jsonrpc2.NewConn.
func New(opts *Options) *Layer {
	l := &Layer{byID: map[jsonrpc2.ID]*request{}, closed: make(chan struct{}), afterFunc: time.AfterFunc}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.CancelGrace == 0 {
		l.opts.CancelGrace = acprpc.DefaultCancelGrace
	}
	if l.opts.InputEndGrace <= 0 {
		l.opts.InputEndGrace = acprpc.DefaultInputEndGrace
	}
	if l.opts.CancelMarkers == nil {
		l.opts.CancelMarkers = acprpc.ACPCancelMarkers(acprpc.ProtocolV1)
	}
	if l.opts.SessionCancelMethods == nil {
		l.opts.SessionCancelMethods = []string{"session/cancel", "session/close"}
	}
	l.log = l.opts.Logger
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l
}

// NewConn is jsonrpc2.NewConn with a new Layer around stream and h.
func NewConn(ctx context.Context, stream jsonrpc2.ObjectStream, h jsonrpc2.Handler, opts *Options, connOpts ...jsonrpc2.ConnOpt) *jsonrpc2.Conn {
	l := New(opts)
	return jsonrpc2.NewConn(ctx, l.Stream(stream), l.Handler(h), connOpts...)
}

// Handler wraps h: each request is registered under its ID, then h runs on
// a goroutine of its own with the request's context; $/cancel_request is
// handled here and never reaches h; other notifications reach h in order,
// on the engine's read goroutine. Once h returns, a request it did not
// answer is answered for it: as cancelled if it was, else -32603.
//
// Each request owns its answer. The engine's writes carry only an ID, so a
// request that reuses the ID of an answered one whose handler has not yet
// returned starts its handler once that one returns: until then, a reply
// under the ID is the earlier handler's second, and is dropped, and the
// earlier handler's return or grace timer answers only its own request.
//
// An h made by jsonrpc2.AsyncHandler is served as the handler it wraps, so
// that each request is still registered before its handler starts (the
// wrapper's goroutine would start it only after the next message is read,
// and its return would be taken for a handler that never replies), and
// its notifications each run on a goroutine of their own, as AsyncHandler
// runs them.
func (l *Layer) Handler(h jsonrpc2.Handler) jsonrpc2.Handler {
	h, async := unwrapAsync(h)
	return handlerFunc(func(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
		switch {
		case req.Notif:
			l.notification(ctx, conn, req, h, async)
		case strings.HasPrefix(req.Method, "$/"):
			_ = l.write(errorAnswer(req.ID, acprpc.MethodNotFound(req.Method))) // never registered: no one else answers it
		default:
			l.serve(ctx, conn, req, h)
		}
	})
}

// asyncHandlerType is the type of jsonrpc2.AsyncHandler's handlers, which
// embed the handler they run on goroutines of their own.
var asyncHandlerType = reflect.TypeOf(jsonrpc2.AsyncHandler(nil))

// unwrapAsync returns the handler an AsyncHandler wraps, and whether h is
// one.
func unwrapAsync(h jsonrpc2.Handler) (jsonrpc2.Handler, bool) {
	v := reflect.ValueOf(h)
	if !v.IsValid() || v.Type() != asyncHandlerType {
		return h, false
	}
	inner, ok := v.Field(0).Interface().(jsonrpc2.Handler)
	return inner, ok && inner != nil
}

type handlerFunc func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request)

func (f handlerFunc) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	f(ctx, conn, req)
}

// notification acts on the cancels, on the read goroutine whatever the
// handler, and passes the rest on to h: in order, or with async each on a
// goroutine of its own.
func (l *Layer) notification(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request, h jsonrpc2.Handler, async bool) {
	switch {
	case req.Method == acprpc.MethodCancelRequest:
		l.peerCancel(req, "requestId")
		return
	case req.Method == acprpc.MethodLSPCancelRequest && l.opts.AcceptLSPCancel:
		l.peerCancel(req, "id")
		return
	case slices.Contains(l.opts.SessionCancelMethods, req.Method):
		l.cancelSession(sessionOf(req.Params))
	}
	if async {
		go h.Handle(ctx, conn, req)
		return
	}
	h.Handle(ctx, conn, req)
}

// serve registers req on the read goroutine, so a cancel read after it
// always finds it, and runs h on a goroutine of its own. A request of the
// session cancel methods (session/close, a request in ACP's schemas)
// cancels its session first.
func (l *Layer) serve(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request, h jsonrpc2.Handler) {
	r := &request{id: req.ID, method: req.Method, sessionID: sessionOf(req.Params),
		returned: make(chan struct{}), sent: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	if slices.Contains(l.opts.SessionCancelMethods, r.method) {
		r.closing = l.cancelSession(r.sessionID)
	}
	l.mu.Lock()
	prev := l.byID[r.id]
	busy := prev != nil && !prev.answered
	if !busy {
		r.prev = prev
		l.byID[r.id] = r
	}
	l.mu.Unlock()
	if busy {
		r.cancel(errAnswered)
		// Not through claim: the answer must not take the entry of the
		// request that holds the ID.
		_ = l.write(errorAnswer(req.ID, &acprpc.Error{Code: acprpc.CodeInvalidRequest,
			Message: "Invalid request: request id " + req.ID.String() + " is already in flight"}))
		return
	}
	go l.run(r, conn, req, h)
}

// run calls h, once the request is free to start, and answers for it if
// it did not.
func (l *Layer) run(r *request, conn *jsonrpc2.Conn, req *jsonrpc2.Request, h jsonrpc2.Handler) {
	defer l.returned(r)
	if !l.await(r, conn) {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			l.log.Error("sourcegraph: handler panicked", "method", r.method, "id", r.id.String(),
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			l.answerFor(r, &acprpc.Error{Code: acprpc.CodeInternalError, Message: fmt.Sprintf("Internal error: handler panicked: %v", p)})
			return
		}
		l.answerFor(r, &acprpc.Error{Code: acprpc.CodeInternalError, Message: "Internal error: the handler returned without replying"})
	}()
	h.Handle(r.ctx, conn, req)
}

// await waits until r's handler may start: the earlier handler of its ID
// has returned, and, for a session/close, the requests it cancelled are
// answered (each within the grace period). It marks the handler started,
// and reports false if the connection ended first.
func (l *Layer) await(r *request, conn *jsonrpc2.Conn) bool {
	gone := conn.DisconnectNotify()
	waits := make([]<-chan struct{}, 0, len(r.closing)+1)
	if r.prev != nil {
		waits = append(waits, r.prev.returned)
	}
	for _, q := range r.closing {
		waits = append(waits, q.sent)
	}
	for _, ch := range waits {
		select {
		case <-ch:
		case <-gone:
			return false
		}
	}
	l.mu.Lock()
	r.started = true
	l.mu.Unlock()
	return true
}

// returned records that r's handler has returned (or never started), which
// frees its ID for the next request's handler.
func (l *Layer) returned(r *request) {
	l.mu.Lock()
	r.over = true
	l.forgetLocked(r)
	l.mu.Unlock()
	close(r.returned)
}

// forgetLocked drops r from the table once it is answered and its handler
// has returned, unless a newer request holds its ID; l.mu is held.
func (l *Layer) forgetLocked(r *request) {
	if r.answered && r.over && l.byID[r.id] == r {
		delete(l.byID, r.id)
	}
}

// answerFor answers r, if it is still unanswered, as cancelled when it was
// cancelled, else with e.
func (l *Layer) answerFor(r *request, e *acprpc.Error) {
	cause, ok := l.claim(r)
	if !ok {
		return
	}
	if cause != nil {
		l.send(r, l.cancelledAnswer(r.id, r.method))
		return
	}
	l.send(r, errorAnswer(r.id, e))
}

// peerCancel cancels the request that params.<member> names.
func (l *Layer) peerCancel(req *jsonrpc2.Request, member string) {
	id, ok := cancelTarget(req.Params, member)
	if !ok {
		l.log.Warn("sourcegraph: ignoring a cancel with malformed params", "method", req.Method)
		return
	}
	l.mu.Lock()
	r := l.byID[id]
	l.mu.Unlock()
	if r == nil {
		l.log.Debug("sourcegraph: ignoring a cancel for a request not in flight", "id", id.String())
		return
	}
	l.cancelWith(r, acprpc.ErrPeerCancelled)
}

// cancelSession cancels every request in flight of the session, and
// returns them.
func (l *Layer) cancelSession(sessionID string) []*request {
	if sessionID == "" {
		return nil
	}
	l.mu.Lock()
	var hit []*request
	for _, r := range l.byID {
		if r.sessionID == sessionID && !r.answered {
			hit = append(hit, r)
		}
	}
	l.mu.Unlock()
	for _, r := range hit {
		l.cancelWith(r, acprpc.ErrSessionCancelled)
	}
	return hit
}

// cancelWith records the first cause, arms the grace timer and cancels the
// request's context. The timer answers r, the request it was armed for, and
// never whichever request holds r's ID when it fires: a timer that fires as
// r's handler replies runs on past its Stop, and by the time it takes l.mu
// the peer may have reused the ID.
func (l *Layer) cancelWith(r *request, cause error) {
	l.mu.Lock()
	if r.cause != nil || r.answered {
		l.mu.Unlock()
		return
	}
	r.cause = cause
	if l.opts.CancelGrace > 0 {
		r.grace = l.afterFunc(l.opts.CancelGrace, func() { l.answerFor(r, nil) })
	}
	l.mu.Unlock()
	r.cancel(cause)
}

// claim takes r's one answer, if it is still unanswered, and returns why
// it was cancelled: the caller then sends it, with send.
func (l *Layer) claim(r *request) (cause error, ok bool) {
	l.mu.Lock()
	if r.answered {
		l.mu.Unlock()
		return nil, false
	}
	r.answered = true
	cause = r.cause
	if r.grace != nil {
		r.grace.Stop()
	}
	l.forgetLocked(r)
	l.mu.Unlock()
	r.cancel(errAnswered)
	return cause, true
}

// claimWritten takes the one answer of the request an answer the engine
// writes under id belongs to, if that request is still unanswered: the
// request whose handler runs under id. Before the newest request of an ID
// starts, the earlier handler still runs, and its answers are dropped.
func (l *Layer) claimWritten(id jsonrpc2.ID) (*request, error) {
	l.mu.Lock()
	r := l.byID[id]
	owned := r != nil && r.started
	l.mu.Unlock()
	if !owned {
		return nil, nil
	}
	cause, ok := l.claim(r)
	if !ok {
		return nil, nil
	}
	return r, cause
}

// cancelledAnswer is the answer of a cancelled request: its method's
// marker, or -32800.
func (l *Layer) cancelledAnswer(id jsonrpc2.ID, method string) *jsonrpc2.Response {
	if marker, ok := l.opts.CancelMarkers[method]; ok {
		result := slices.Clone(marker)
		return &jsonrpc2.Response{ID: id, Result: (*json.RawMessage)(&result)}
	}
	return errorAnswer(id, &acprpc.Error{Code: acprpc.CodeRequestCancelled, Message: "Request cancelled"})
}

func errorAnswer(id jsonrpc2.ID, e *acprpc.Error) *jsonrpc2.Response {
	out := &jsonrpc2.Error{Code: e.Code, Message: e.Message}
	if e.Data != nil {
		data := slices.Clone(e.Data)
		out.Data = (*json.RawMessage)(&data)
	}
	return &jsonrpc2.Response{ID: id, Error: out}
}

// sessionOf reads params.sessionId when it is a string, or "". It finds the
// member as the root Conn and the generated types do, by its exact name
// (the last one, if repeated), where encoding/json would take a member
// whose name differs in case too.
func sessionOf(params *json.RawMessage) string {
	if params == nil {
		return ""
	}
	if sid := wire.Member(*params, "sessionId"); len(sid) > 0 && sid[0] == '"' {
		return wire.Unquote(sid)
	}
	return ""
}

// cancelTarget reads the ID a cancel names as the engine reads a request's
// ID: a string, or an integer taken as the engine takes it (-1 included), so
// that a cancel finds every request the engine let through.
func cancelTarget(params *json.RawMessage, member string) (jsonrpc2.ID, bool) {
	if params == nil {
		return jsonrpc2.ID{}, false
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(*params, &p) != nil || p[member] == nil {
		return jsonrpc2.ID{}, false
	}
	raw := p[member]
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return jsonrpc2.ID{Str: s, IsString: true}, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return jsonrpc2.ID{}, false
	}
	i, err := n.Int64()
	if err != nil {
		return jsonrpc2.ID{}, false
	}
	return jsonrpc2.ID{Num: uint64(i)}, true
}

// inputEnded answers every request read before the peer's input ended, why
// saying how, before the engine sees the end: the engine closes then, and
// drops every reply. The end of input is the peer saying it will send
// nothing more, not that it stopped reading. Each request's handler has
// until Options.InputEndGrace has passed to reply; those that have not are
// answered as cancelled, their contexts ending. It returns early if the
// engine closes the stream meanwhile (its Close).
func (l *Layer) inputEnded(why error) {
	l.mu.Lock()
	var open []*request
	for _, r := range l.byID {
		if !r.answered {
			open = append(open, r)
		}
	}
	l.mu.Unlock()
	if len(open) == 0 {
		return
	}
	grace := time.NewTimer(l.opts.InputEndGrace)
	defer grace.Stop()
	for i, r := range open {
		select {
		case <-r.sent:
			continue
		case <-l.closed:
			return
		case <-grace.C:
		}
		cause := fmt.Errorf("%w by the peer: its output ended: %w", acprpc.ErrConnClosed, why)
		for _, r := range open[i:] {
			l.cancelAtEnd(r, cause)
		}
		return
	}
}

// cancelAtEnd answers r as cancelled for cause, unless it is answered
// already.
func (l *Layer) cancelAtEnd(r *request, cause error) {
	l.mu.Lock()
	if r.cause == nil {
		r.cause = cause
	}
	l.mu.Unlock()
	r.cancel(cause)
	l.answerFor(r, nil)
}
