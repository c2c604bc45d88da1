package acprpc

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"time"
)

// DefaultCancelGrace is how long a cancelled request's handler may take to
// return before the request is answered for it, unless Options.CancelGrace
// says otherwise.
const DefaultCancelGrace = 2 * time.Second

// DefaultInputEndGrace is how long, once the peer's input has ended, the
// requests and notifications read before the end are given to be handled,
// unless Options.InputEndGrace says otherwise.
const DefaultInputEndGrace = time.Second

// DefaultMaxUnsentNotifications is how many of this side's notifications
// may wait to be written before Notify waits for room, unless
// Options.MaxUnsentNotifications says otherwise: enough to keep a stream of
// small updates writing in batches, few enough that a cancelled turn's
// answer waits behind no more updates than an agent that writes its own
// (64, the default before, let about 1.6 times as many through a stop).
const DefaultMaxUnsentNotifications = 16

// DefaultUnreadInputWait is how long a notification waits, at most, while
// the peer's input waits unread, unless Options.UnreadInputWait says
// otherwise: longer than the reader takes to get a core on a busy machine
// at the median, short enough that a reader held up elsewhere slows a
// stream rather than stopping it.
const DefaultUnreadInputWait = 2 * time.Millisecond

// The defaults of Options' bounds, each given by value in its field's
// documentation.
const (
	defaultMaxInFlight                = 100_000
	defaultMaxOutgoing                = 100_000
	defaultMaxQueuedNotifications     = 10_000
	defaultMaxQueuedWrite             = 32 << 20
	defaultMaxInFlightBytes           = 256 << 20
	defaultMaxQueuedNotificationBytes = 64 << 20
	defaultMaxUnsentNotificationBytes = 64 << 10
)

// Options configure a Conn. The zero value (or a nil *Options) is ready for
// ACP: markers and session cancellation as the protocol defines them.
type Options struct {
	// Logger receives the connection's diagnostics: bad messages (a line
	// that is not JSON with its first bytes), ignored cancels, panics with
	// their stacks, a handler that ignored its cancel, a peer that answers
	// a notification. Nil means silent.
	Logger *slog.Logger

	// CancelGrace is how long a handler may run on after its request was
	// cancelled. When it passes, the request is answered with its method's
	// marker or -32800, a warning names the method, the ID and how long the
	// handler overran, and the handler's later return is dropped. Zero
	// means DefaultCancelGrace; a negative value waits for the handler.
	CancelGrace time.Duration

	// InputEndGrace is how long, once the peer's input has ended (it will
	// send nothing more, and may still read), the requests and
	// notifications read before the end are given to be handled, with
	// their contexts live. Each such request is answered before the
	// connection closes: with what its handler returns within the bound,
	// else, once the bound has passed, as cancelled (its method's marker or
	// -32800), its handler's context ending with ErrConnClosed and its later
	// return dropped; notifications still queued then are dropped. The
	// connection closes as soon as all are done. Zero or less means
	// DefaultInputEndGrace.
	InputEndGrace time.Duration

	// HandlerTimeout, if positive, is a deadline for each incoming request.
	// Passing it cancels the request with cause ErrDeadline.
	HandlerTimeout time.Duration

	// MaxConcurrentRequests, if positive, bounds how many request handlers
	// run at once; later requests wait for a slot, and can be cancelled
	// while they wait.
	MaxConcurrentRequests int

	// MaxMessageSize is the longest message accepted, in bytes (a line's end
	// not counted). Zero means DefaultMaxMessageSize.
	MaxMessageSize int

	// MaxInFlight bounds the peer's requests in flight at once, waiting or
	// running. A request over the limit is answered at once with -32603
	// and never queued. Zero means 100,000.
	MaxInFlight int

	// MaxInFlightBytes bounds the bytes of the peer's requests held in
	// flight: each request's message is held, params and all, from when it
	// is read until its handler has returned (a handler that outlives its
	// answer still holds it). A request that would take the total over the
	// bound is answered at once with -32603, like one over MaxInFlight, and
	// never queued: the reader never waits for it, so the cancels and the
	// answers that end the requests in flight are always read. Zero means
	// 256 MiB; it is never below MaxMessageSize.
	MaxInFlightBytes int

	// MaxOutgoing bounds this side's calls awaiting an answer, counting
	// cancelled calls whose answer is still due (their IDs stay reserved
	// until it comes), except those made with ReleaseOnCancel. Over it, Call fails at once with ErrTooManyCalls and
	// sends nothing, so a peer that never answers cannot make the calls and
	// cancels waiting for it grow without end; no cancel is ever dropped.
	// Zero means 100,000.
	MaxOutgoing int

	// MaxQueuedNotifications bounds the notifications waiting for the
	// handler. When the queue is full the connection stops reading until
	// it has room: a notification is never dropped. While a notification
	// handler waits for a Call made with its context, the answer may be
	// behind the notifications that fill the queue, so the reader goes on
	// reading up to four times the bound (in number and in bytes); past
	// that it waits again, and such a call ends only with its context.
	// Zero means 10,000.
	MaxQueuedNotifications int

	// MaxQueuedNotificationBytes bounds the same queue by the bytes of its
	// messages: the reader waits while the next notification would take
	// the queue over it. A notification is always let in when the queue is
	// empty. Zero means 64 MiB; it is never below MaxMessageSize.
	MaxQueuedNotificationBytes int

	// MaxQueuedWrite bounds the bytes of answers waiting to be written.
	// When a peer sends requests faster than it reads their answers and
	// more than this is queued, the connection stops reading until it
	// drains, so memory stays bounded. This side's own requests,
	// notifications and cancels do not count: its requests and cancels are
	// never held back, and its notifications have their own bounds
	// (MaxUnsentNotifications). Zero means 32 MiB.
	MaxQueuedWrite int

	// MaxUnsentNotifications bounds this side's notifications queued by
	// Notify and not yet written (the batch being written counts until it
	// is), and MaxUnsentNotificationBytes their bytes: when either is
	// reached, Notify waits for room until the peer reads or its context
	// ends. So a peer that stops reading holds this side's memory to the
	// bounds, and a cancelled turn's answer, which goes out after the
	// updates the turn queued, waits behind at most this many of them.
	// A notification is always let in when none waits, whatever its size.
	// Zero means 16 (DefaultMaxUnsentNotifications) and 64 KiB: 16 small
	// updates still go out in batches, at a rate far beyond any model's,
	// and a stop lets through no more of them than an agent that writes
	// its own (docs/benchmarks.md); 64 KiB, about the kernel's pipe buffer
	// again, binds large ones.
	MaxUnsentNotifications     int
	MaxUnsentNotificationBytes int

	// UnreadInputWait is how long Notify waits, at most, while the peer has
	// written what the read goroutine has not read yet, when the transport
	// can tell (a Stream over a descriptor, on Linux): the peer's message,
	// a session/cancel most likely under a stream, is taken in before the
	// stream runs on, instead of waiting for a core the stream keeps busy.
	// A read ends the wait at once. Zero means DefaultUnreadInputWait; a
	// negative value never waits.
	UnreadInputWait time.Duration

	// WaitAfterCancel is how long Call waits, once its context has ended
	// and $/cancel_request is sent, for the peer's answer, so that a caller
	// can get a marker or a partial result. Zero returns at once. A call
	// can override it with the WaitAfterCancel CallOption. A session/prompt
	// call waits TurnCancelWait instead.
	WaitAfterCancel time.Duration

	// TurnCancelWait is how long a session/prompt call whose context ended
	// (a cancel, a deadline) or that Shutdown cancelled waits for the
	// agent's answer, once the call has cancelled its turn with
	// session/cancel as CancelSession does. An agent that honours it
	// answers stopReason "cancelled", which the call returns as a result
	// with a nil error; if the wait runs out first, the call returns an
	// error that matches ErrCancelled and ctx's error and says so. Zero
	// means DefaultTurnCancelWait (5s); a negative value returns at once.
	// The WaitAfterCancel CallOption overrides it for one call.
	TurnCancelWait time.Duration

	// Hooks see every message the connection receives or sends; the zero
	// value has none.
	Hooks Hooks

	// HandlerContext, if set, makes the context each handler gets, for
	// per-request values such as a trace span or a logger that names the
	// request. It is called with the context the Conn made for a request or
	// notification, and the request (its method, ID and params), and returns
	// the context the handler gets, which must derive from ctx: cancellation,
	// RequestFromContext and ConnFromContext reach the handler through it. A
	// nil return keeps ctx; a context that does not derive from ctx is
	// ignored, and a panic recovered, each with an error logged, and the
	// handler then gets ctx. The answer's Sent hook sees the returned
	// context, so a span started here can end there. For a request it runs on
	// the read goroutine as the request is read, before it is registered and
	// before the next message is read, so no cancel can overtake it; for a
	// notification, on the notification goroutine just before its handler.
	// Keep it quick, and never call the Conn's blocking methods from it. Nil
	// gives every handler the Conn's own context.
	HandlerContext func(ctx context.Context, req *Request) context.Context

	// ReportCancelledTurns, for a client, turns an agent's stopReason
	// "end_turn" into "cancelled" in the answer to a session/prompt call
	// whose turn this side cancelled before the answer was read: by
	// CancelSession for its session, by the end of the call's context, or
	// by Shutdown. ACP says a cancelled turn ends "cancelled", yet v1 agents
	// that answer "end_turn" after session/cancel are common, and a client
	// that shows the stop reason would report a cancelled turn as done.
	// Every other member of the answer, and every other stop reason, is the
	// agent's. An answer read before the cancel is left alone: that turn
	// ended before it. v2's prompt answers carry no stop reason, so it
	// changes nothing there. Off by default.
	ReportCancelledTurns bool

	// AcceptLSPCancel also honours LSP's spelling, $/cancelRequest with
	// {"id": ...}, as sent by older peers.
	AcceptLSPCancel bool

	// CancelMarkers maps a method to the result that answers it when it is
	// cancelled, instead of -32800. Nil means the markers of the
	// connection's ACP version (ACPCancelMarkers); a non-nil map applies
	// to every version, and an empty one means none.
	CancelMarkers map[string]json.RawMessage

	// SessionCancelMethods are the notifications that cancel every
	// in-flight request of the session named by their params.sessionId.
	// Nil means ACP's session/cancel and session/close; an empty non-nil
	// slice turns session cancellation off.
	SessionCancelMethods []string

	// PinnedVersion, if set, is the one ACP version the connection speaks:
	// its rules apply from the start, and no initialize exchange over the
	// Conn changes them, whatever version its answer names (an SDK that
	// speaks v1 alone stays on v1; a negotiating agent negotiates among this
	// version alone). Otherwise the version is learnt from the initialize
	// exchange the Conn carries (see Conn.ProtocolVersion), and until then
	// v1's rules apply.
	PinnedVersion ProtocolVersion

	// SupportedVersions, if set, are the ACP versions an agent supports, and
	// the Conn negotiates the peer's initialize itself, on the read
	// goroutine before the handler runs: the highest of them at or below the
	// version the client asks for (with v1 alone, always v1, as v1 falls
	// back), else the request is answered -32022 with {requested, supported}
	// data and the handler never sees it. A handler with a
	// ProtocolVersions method (VersionRouter)
	// sets them when this is nil. Without them the application answers
	// initialize, and its answer's protocolVersion sets the connection's
	// version.
	SupportedVersions []ProtocolVersion
}

// settled returns the options with every default filled in.
func (o *Options) settled() Options {
	var s Options
	if o != nil {
		s = *o
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.CancelGrace == 0 {
		s.CancelGrace = DefaultCancelGrace
	}
	if s.UnreadInputWait == 0 {
		s.UnreadInputWait = DefaultUnreadInputWait
	}
	if s.InputEndGrace <= 0 {
		s.InputEndGrace = DefaultInputEndGrace
	}
	// A limit of zero or less means its default.
	s.MaxMessageSize = cmp.Or(max(s.MaxMessageSize, 0), DefaultMaxMessageSize)
	s.MaxInFlight = cmp.Or(max(s.MaxInFlight, 0), defaultMaxInFlight)
	s.MaxOutgoing = cmp.Or(max(s.MaxOutgoing, 0), defaultMaxOutgoing)
	s.MaxQueuedNotifications = cmp.Or(max(s.MaxQueuedNotifications, 0), defaultMaxQueuedNotifications)
	s.MaxQueuedWrite = cmp.Or(max(s.MaxQueuedWrite, 0), defaultMaxQueuedWrite)
	s.MaxUnsentNotifications = cmp.Or(max(s.MaxUnsentNotifications, 0), DefaultMaxUnsentNotifications)
	s.MaxUnsentNotificationBytes = cmp.Or(max(s.MaxUnsentNotificationBytes, 0), defaultMaxUnsentNotificationBytes)
	s.MaxInFlightBytes = max(cmp.Or(max(s.MaxInFlightBytes, 0), defaultMaxInFlightBytes), s.MaxMessageSize)
	s.MaxQueuedNotificationBytes = max(cmp.Or(max(s.MaxQueuedNotificationBytes, 0), defaultMaxQueuedNotificationBytes), s.MaxMessageSize)
	if s.SessionCancelMethods == nil {
		s.SessionCancelMethods = []string{methodSessionCancel, methodSessionClose}
	}
	return s
}
