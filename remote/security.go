package remote

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// refusal is why a request was turned away, and the status it gets.
type refusal struct {
	status int
	reason string
}

// checkSource applies the Server's rules on where a request comes from, in
// order: who connects (the peer's address), which name it used (Host,
// against DNS rebinding) and which page sent it (Origin, against
// cross-site requests from a browser). It returns nil when the request
// may go on to authentication.
func (s *Server) checkSource(r *http.Request) *refusal {
	if !s.peerAllowed(r.RemoteAddr) {
		return &refusal{http.StatusForbidden, "Forbidden: peer address not allowed"}
	}
	if !s.hostAllowed(r.Host) {
		return &refusal{http.StatusForbidden, "Forbidden: host not allowed"}
	}
	if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(origin, r) {
		return &refusal{http.StatusForbidden, "Forbidden: origin not allowed"}
	}
	return nil
}

// allowedPage returns the Origin of a request from a browser page that the
// Server lets in, or "" for a request of any other page or of none. A
// page must pass both the Host and the Origin check: under a name the
// Server does not answer to, as DNS rebinding gives one, a page's origin
// matches the request's Host without being the Server's own.
func (s *Server) allowedPage(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if origin == "" || !s.hostAllowed(r.Host) || !s.originAllowed(origin, r) {
		return ""
	}
	return origin
}

// authenticate applies Options.Authenticate, if set: who the client is.
func (s *Server) authenticate(r *http.Request) *refusal {
	if auth := s.opts.Authenticate; auth != nil {
		if err := auth(r); errors.Is(err, ErrUnauthorized) {
			return errNoBearerToken
		} else if err != nil {
			return &refusal{http.StatusUnauthorized, "Unauthorized"}
		}
	}
	return nil
}

// peerAllowed reports whether the TCP peer is loopback or in AllowedPeers.
func (s *Server) peerAllowed(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	if addr.IsLoopback() {
		return true
	}
	for _, p := range s.opts.AllowedPeers {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// hostAllowed reports whether the Host header names this machine's
// loopback (localhost, *.localhost, a loopback address) or an allowed
// host. A DNS rebinding attack reaches a loopback server under the
// attacker's own name, which this refuses.
func (s *Server) hostAllowed(hostport string) bool {
	host := strings.ToLower(stripPort(hostport))
	if host == "" {
		return false
	}
	if isLoopbackName(host) {
		return true
	}
	for _, h := range s.opts.AllowedHosts {
		if h == "*" || strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// isLoopbackName reports whether host, without its port, is a loopback
// address or a name that can only mean this machine (RFC 6761).
func isLoopbackName(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && addr.Unmap().IsLoopback()
}

// originAllowed reports whether a browser page from origin may talk to the
// server: one of its own pages (the same scheme, host and port as the
// request), or one of AllowedOrigins.
func (s *Server) originAllowed(origin string, r *http.Request) bool {
	for _, o := range s.opts.AllowedOrigins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // "null" and other opaque origins
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(withPort(u.Host, scheme), withPort(r.Host, scheme))
}

// withPort adds the scheme's default port to a host that has none, so
// that "localhost" and "localhost:80" compare equal for http.
func withPort(hostport, scheme string) string {
	if _, _, err := net.SplitHostPort(hostport); err == nil {
		return hostport
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(hostport, "[]"), port)
}

func stripPort(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return hostport
}

// errNoBearerToken refuses a request that BearerToken's check refused; its
// answer names the scheme (RFC 6750).
var errNoBearerToken = &refusal{http.StatusUnauthorized, "Unauthorized: missing or wrong bearer token"}

// ErrUnauthorized is what BearerToken's check returns for a request
// without the token. An Options.Authenticate of one's own that returns it
// (or wraps it) gets the same answer: 401 with "WWW-Authenticate: Bearer".
var ErrUnauthorized = errors.New("remote: missing or wrong bearer token")

// BearerToken returns an Options.Authenticate that admits requests whose
// Authorization header is the scheme "Bearer" (in any case, as RFC 7235
// has it), one or more spaces, and token. The credential and token are
// compared by their SHA-256 digests, in constant time: digests are always
// of one length, so the time a wrong header takes tells neither the
// token's bytes nor its length. A refused request gets
// "WWW-Authenticate: Bearer" with its 401. A client sends the header with
// DialOptions.Header; a browser page can send it over Streamable HTTP
// (fetch), not over WebSocket, whose browser API sets no headers.
func BearerToken(token string) func(r *http.Request) error {
	want := sha256.Sum256([]byte(token))
	return func(r *http.Request) error {
		got := sha256.Sum256([]byte(bearerCredential(r.Header.Get("Authorization"))))
		if token == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			return ErrUnauthorized
		}
		return nil
	}
}

// bearerCredential returns what follows the Bearer scheme and its spaces
// in an Authorization header, or "" when the header is of another scheme.
func bearerCredential(header string) string {
	scheme, rest, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimLeft(rest, " ")
}
