package remote

import (
	"cmp"
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/acpkit/acprpc"
)

// Defaults of Options; each can be changed there.
const (
	DefaultPath              = "/acp"
	DefaultMaxConnections    = 1024
	DefaultIdleTimeout       = time.Minute
	DefaultWriteTimeout      = time.Minute
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultMaxQueuedBytes    = 32 << 20
	DefaultMaxSessions       = 1024
	DefaultKeepAlive         = 15 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultMaxPendingPosts   = 16
	DefaultMaxPendingBytes   = 32 << 20
	DefaultSendBuffer        = 64 << 10
)

// Options configure a Server. The zero value (or a nil *Options) is the safe
// default for an agent on the user's own machine: loopback peers only,
// loopback host names only, no cross-origin browser pages, bounded
// connections, messages, queues and waits.
type Options struct {
	// Path is where ListenAndServe and Serve serve ACP; "" means "/acp".
	// ServeHTTP serves whatever path it is given.
	Path string

	// AllowedPeers are networks, besides loopback, that connections may come
	// from (by the TCP peer's address). Allowing every address takes
	// 0.0.0.0/0 and ::/0. Behind a reverse proxy the peer is the proxy.
	AllowedPeers []netip.Prefix

	// AllowedHosts are host names, besides localhost, *.localhost and
	// loopback addresses, that a request's Host header may name (compared
	// without the port, case-insensitively). A server reachable under a
	// real name lists it here. "*" allows any host, which gives up the
	// protection against DNS rebinding.
	AllowedHosts []string

	// AllowedOrigins are origins ("https://app.example.com", scheme, host
	// and port as a browser sends them) whose pages may connect, besides
	// the server's own origin. Requests without an Origin header come from
	// programs, not browsers, and are allowed. "*" allows every origin,
	// which lets any web page the user opens talk to the agent.
	AllowedOrigins []string

	// Authenticate, if set, decides every request after the checks above
	// and before anything else runs: an error refuses it with 401
	// Unauthorized. See BearerToken. A CORS preflight of an allowed origin
	// is answered before it: browsers send preflights without credentials.
	Authenticate func(r *http.Request) error

	// TLSConfig, if set, makes Serve and ListenAndServe serve HTTPS and WSS
	// with it; it must hold a certificate. ServeHTTP leaves TLS to the
	// http.Server it runs under.
	TLSConfig *tls.Config

	// MaxConnections bounds the connections open at once, WebSocket and
	// Streamable HTTP together; one more is refused with 503. Zero means
	// DefaultMaxConnections.
	MaxConnections int

	// MaxMessageSize bounds a message from the client, in bytes. A
	// WebSocket connection's Conn sets its own (acprpc.Options
	// MaxMessageSize) through SetReadLimit; a larger POST body is refused
	// with 413. Zero means acprpc.DefaultMaxMessageSize.
	MaxMessageSize int

	// IdleTimeout bounds a client's silence. A WebSocket client that sends
	// nothing, not even the pong to the server's pings (sent four times
	// per IdleTimeout), is disconnected. A Streamable HTTP connection with
	// no open connection-level SSE stream for this long is closed. Under
	// Serve, a keep-alive HTTP connection that waits this long for its
	// next request is closed too. Zero means DefaultIdleTimeout; negative
	// means no limit.
	IdleTimeout time.Duration

	// WriteTimeout bounds how long a message to the client may wait for it
	// to read: a WebSocket write, or room on the SSE streams of a Streamable
	// HTTP connection. When it passes, the connection closes. It also
	// bounds each write of an SSE stream (a stream whose client stops
	// reading ends, and its HTTP connection closes) and of every other
	// answer. Zero means DefaultWriteTimeout; negative means no limit.
	WriteTimeout time.Duration

	// ReadHeaderTimeout bounds how long a client may take to send a
	// request's headers, on the http.Server of Serve and ListenAndServe.
	// Zero means DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration

	// BodyTimeout bounds how long a client may take to send a POST's body,
	// from the moment the Server starts reading it. A body that has not
	// come whole by then is answered 408 Request Timeout and its HTTP
	// connection closed. Zero means DefaultBodyTimeout; negative means no
	// limit. ServeHTTP applies it too, under any http.Server that supports
	// read deadlines.
	BodyTimeout time.Duration

	// MaxPendingPosts bounds the POSTs of one Streamable HTTP connection
	// whose message its Conn has not taken yet (a Conn takes one at a time,
	// and none while it is busy), counted from before the body is read.
	// One more is answered 429 Too Many Requests with Retry-After at once.
	// Zero means DefaultMaxPendingPosts.
	MaxPendingPosts int

	// MaxPendingBytes bounds the bytes those POSTs hold; a POST whose body
	// would take them over it is answered 429 as well. It is never below
	// MaxMessageSize, so one message of any allowed size fits. Zero means
	// DefaultMaxPendingBytes.
	MaxPendingBytes int

	// MaxQueuedBytes bounds the server's messages waiting on the SSE
	// streams of one Streamable HTTP connection for the client to read
	// them. At the limit the connection's Conn waits (and, after
	// WriteTimeout, closes). Besides them, the connection's stream keeps
	// the last events it wrote, up to a quarter of MaxQueuedBytes, for a
	// GET that resumes it after a cut (Last-Event-ID), for as long as the
	// connection lives: a connection holds up to one and a quarter times
	// MaxQueuedBytes (a resume queues the kept events again), and an idle
	// one that has written that much still keeps the quarter. A cut
	// stream resumes only if what it lost in flight (the socket buffers
	// and proxies between) fits in that quarter; otherwise the resuming
	// GET gets 410 and the connection ends: keep MaxQueuedBytes well
	// above four times a connection's socket buffers. Zero means
	// DefaultMaxQueuedBytes.
	MaxQueuedBytes int

	// SendBuffer is the kernel's send buffer (SO_SNDBUF) of the server's
	// side of each WebSocket connection and each SSE stream, in bytes:
	// what the network may hold of the server's messages beyond the
	// Conn's own bound on its unsent notifications
	// (acprpc.Options.MaxUnsentNotifications and
	// MaxUnsentNotificationBytes), so how far a turn may run ahead of a
	// client that reads slowly, and how long the answer to a cancel waits
	// behind the updates already on their way. The system's own buffer
	// grows with a connection's pace, to megabytes (4 MiB on Linux, which
	// also doubles the size set here for its bookkeeping). A connection
	// carries at most about SendBuffer per round trip: raise it for a
	// fast link with a long round trip. Zero means DefaultSendBuffer
	// (64 KiB, a pipe's buffer); negative leaves the system's own. It
	// applies to the connections the Server can reach under net/http (a
	// TCP or Unix socket, with TLS or without); an SSE stream served over
	// HTTP/2 is bounded by HTTP/2's flow control instead.
	SendBuffer int

	// MaxSessions bounds the session streams of one Streamable HTTP
	// connection. A GET for one more is refused with 409; a server message
	// for one more closes the connection. Zero means DefaultMaxSessions.
	MaxSessions int

	// KeepAlive is how often an idle SSE stream gets a ":" comment line, so
	// that proxies and clients see it is alive. Zero means
	// DefaultKeepAlive.
	KeepAlive time.Duration

	// Logger receives the Server's refusals, at Warn: a peer address, Host
	// or Origin not allowed, a missing or wrong token, Authenticate's
	// refusal, and a bound reached (MaxConnections, MaxPendingPosts and
	// MaxPendingBytes, MaxSessions), each line saying what to change if the
	// client was meant to get in. Each kind of refusal is logged at once,
	// then at most once every ten seconds, with the count of those left out:
	// a peer refused in a loop costs a line per kind every ten seconds, and
	// the log's memory is bounded whatever it sends. Refusals while the
	// Server shuts down are not logged. Nil means slog.Default() (the one in force
	// when a refusal is logged), as
	// http.Server logs to the standard logger when its ErrorLog is nil: a
	// refusal is the operator's to see, and a Server that refuses silently
	// looks broken to a client's author. To silence it, pass
	// slog.New(slog.DiscardHandler). (acprpc.Options.Logger, whose lines
	// are a peer's mistakes, is silent when nil.)
	Logger *slog.Logger
}

// settled returns the options with every default filled in.
func (o *Options) settled() Options {
	var s Options
	if o != nil {
		s = *o
	}
	if s.Path == "" {
		s.Path = DefaultPath
	}
	s.MaxConnections = cmp.Or(max(s.MaxConnections, 0), DefaultMaxConnections)
	s.MaxMessageSize = cmp.Or(max(s.MaxMessageSize, 0), acprpc.DefaultMaxMessageSize)
	s.MaxQueuedBytes = cmp.Or(max(s.MaxQueuedBytes, 0), DefaultMaxQueuedBytes)
	s.MaxSessions = cmp.Or(max(s.MaxSessions, 0), DefaultMaxSessions)
	s.SendBuffer = cmp.Or(s.SendBuffer, DefaultSendBuffer)
	s.MaxPendingPosts = cmp.Or(max(s.MaxPendingPosts, 0), DefaultMaxPendingPosts)
	s.MaxPendingBytes = max(cmp.Or(max(s.MaxPendingBytes, 0), DefaultMaxPendingBytes), s.MaxMessageSize)
	s.BodyTimeout = durationOrDefault(s.BodyTimeout, DefaultBodyTimeout)
	s.IdleTimeout = durationOrDefault(s.IdleTimeout, DefaultIdleTimeout)
	s.WriteTimeout = durationOrDefault(s.WriteTimeout, DefaultWriteTimeout)
	s.ReadHeaderTimeout = durationOrDefault(s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	s.KeepAlive = durationOrDefault(s.KeepAlive, DefaultKeepAlive)
	return s
}

// durationOrDefault maps zero to def and a negative duration to 0, which
// the transports read as "no limit".
func durationOrDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}
