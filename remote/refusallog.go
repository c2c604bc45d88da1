package remote

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// refusalLogEvery is how often each kind of refusal may be logged: the
// first at once, then at most one line per kind in each period, which
// counts the refusals left out since the last. A peer that is refused in a
// loop costs the log one line per kind every ten seconds.
const refusalLogEvery = 10 * time.Second

// maxRefusalKinds bounds the kinds of refusal the log keeps apart; any
// more share one entry. Each kind is one of the Server's own reasons,
// never a peer's words, so there are fewer than this; the bound holds
// whatever changes.
const maxRefusalKinds = 16

// maxLoggedHeader is how much of a header a peer chose (Host, Origin) a
// line shows.
const maxLoggedHeader = 200

// refusalLog logs the Server's refusals through Options.Logger, rate
// limited by kind. Its memory is bounded by maxRefusalKinds whatever a
// peer sends.
type refusalLog struct {
	logger *slog.Logger     // nil: slog.Default()
	now    func() time.Time // time.Now; tests replace it

	mu    sync.Mutex
	kinds map[string]*refusalKind // by the refusal's reason
}

// refusalKind is what the log remembers of one kind of refusal.
type refusalKind struct {
	logged  time.Time // when its last line was written
	leftOut int       // refusals since then that got no line
}

func newRefusalLog(logger *slog.Logger) *refusalLog {
	return &refusalLog{logger: logger, now: time.Now, kinds: make(map[string]*refusalKind)}
}

// refused logs that r was refused for ref, unless a line for its kind was
// written within refusalLogEvery. A refusal because the Server is
// shutting down is its operator's doing, and is not logged.
func (l *refusalLog) refused(r *http.Request, ref *refusal) {
	if ref == errShuttingDown {
		return
	}
	leftOut, ok := l.take(ref.reason)
	if !ok {
		return
	}
	attrs := []any{"status", ref.status, "reason", ref.reason, "peer", r.RemoteAddr, "method", r.Method,
		"host", clip(r.Host)}
	if origin := r.Header.Get("Origin"); origin != "" {
		attrs = append(attrs, "origin", clip(origin))
	}
	if leftOut > 0 {
		attrs = append(attrs, "not_logged_since_last", leftOut)
	}
	logger := l.logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Warn("remote: request refused: "+refusalAdvice(ref), attrs...)
}

// take reports whether a refusal of reason gets a line now, and how many
// of its kind got none since the last.
func (l *refusalLog) take(reason string) (leftOut int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.kinds[reason]
	if k == nil {
		if len(l.kinds) >= maxRefusalKinds {
			reason = "" // every other kind shares one entry
			k = l.kinds[reason]
		}
		if k == nil {
			k = &refusalKind{}
			l.kinds[reason] = k
			k.logged = l.now()
			return 0, true
		}
	}
	now := l.now()
	if now.Sub(k.logged) < refusalLogEvery {
		k.leftOut++
		return 0, false
	}
	leftOut, k.leftOut, k.logged = k.leftOut, 0, now
	return leftOut, true
}

// refusalAdvice says what a refusal means to the operator, and what to
// change if the client was meant to get in.
func refusalAdvice(ref *refusal) string {
	switch ref.reason {
	case "Forbidden: peer address not allowed":
		return "the peer's address is neither loopback nor in Options.AllowedPeers; add its network there if it may connect (behind a reverse proxy, the peer is the proxy)"
	case "Forbidden: host not allowed":
		return "the Host header names neither this machine's loopback nor one of Options.AllowedHosts; list the server's name there if clients reach it by that name (a foreign name is also what DNS rebinding sends)"
	case "Forbidden: origin not allowed":
		return "a browser page of another origin; list it in Options.AllowedOrigins if it may connect"
	case errNoBearerToken.reason:
		return "the request has no Authorization: Bearer header with the server's token, or a wrong one; a Go client sends it with DialOptions.Header"
	case errTooManyConnections.reason:
		return "Options.MaxConnections connections are open; raise it, or find the client that opens connections and never closes them"
	case errOverBudget.reason:
		return "a Streamable HTTP client sent more messages than its connection has taken yet (Options.MaxPendingPosts, MaxPendingBytes); it was told to retry"
	case "Conflict: " + errTooManySessions.Error()[len("remote: "):]:
		return "a Streamable HTTP connection has Options.MaxSessions session streams open; raise it, or find the client that opens streams for sessions it no longer uses"
	case "Unauthorized":
		return "Options.Authenticate refused it"
	}
	return ref.reason
}

// clip cuts a header a peer chose to maxLoggedHeader bytes.
func clip(s string) string {
	if len(s) > maxLoggedHeader {
		return s[:maxLoggedHeader] + "..."
	}
	return s
}
