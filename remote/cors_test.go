package remote

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The requests a browser page of an allowed origin makes, and what the
// browser's CORS check asks of their answers.

const pageOrigin = "https://editor.example"

// preflightOf is the preflight Chromium sends before a fetch that uses
// method and sets the given request headers: every header but the ones
// the browser adds itself, and never a credential.
func preflightOf(method, requestHeaders string) []string {
	return []string{
		"Origin", pageOrigin,
		"Access-Control-Request-Method", method,
		"Access-Control-Request-Headers", requestHeaders,
		"Accept", "*/*",
		"Sec-Fetch-Mode", "cors",
		"Sec-Fetch-Site", "cross-site",
		"Sec-Fetch-Dest", "empty",
		"Referer", pageOrigin + "/",
		"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
	}
}

// assertPreflightGranted checks a preflight's answer as the browser does
// (the CORS protocol's CORS-preflight fetch): an ok status, the page's
// origin allowed with credentials, the method and every requested header
// allowed (by name, case-insensitively).
func assertPreflightGranted(t *testing.T, resp *http.Response, method, requestHeaders string) {
	t.Helper()
	h := resp.Header
	assert.True(t, resp.StatusCode >= 200 && resp.StatusCode < 300, "the preflight's status is %d, not ok", resp.StatusCode)
	assert.Equal(t, pageOrigin, h.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "true", h.Get("Access-Control-Allow-Credentials"))
	assert.Contains(t, headerList(h.Get("Access-Control-Allow-Methods")), strings.ToLower(method))
	allowed := headerList(h.Get("Access-Control-Allow-Headers"))
	for _, name := range headerList(requestHeaders) {
		assert.Contains(t, allowed, name, "the page may not send %s", name)
	}
}

// headerList splits a comma-separated header value into lowercase names.
func headerList(v string) []string {
	var names []string
	for n := range strings.SplitSeq(v, ",") {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// TestPreflightOfAllowedOriginIsAnsweredWithoutCredentials sends the
// preflights a page sends before each request of a Streamable HTTP
// connection, to a server that requires a bearer token. Browsers never send
// credentials on a preflight, so one refused for lacking them leaves the
// page unable to send its authenticated request at all.
func TestPreflightOfAllowedOriginIsAnsweredWithoutCredentials(t *testing.T) {
	ts := startServer(t, &Options{AllowedOrigins: []string{pageOrigin}, Authenticate: BearerToken("s3cret")})
	c := newRawHTTP(t, ts.url("http"))
	for _, tc := range []struct{ method, headers string }{
		{http.MethodPost, "authorization,content-type"},                    // initialize
		{http.MethodPost, "acp-connection-id,authorization,content-type"},  // every later message
		{http.MethodGet, "acp-connection-id,acp-session-id,authorization"}, // an SSE stream
		{http.MethodDelete, "acp-connection-id,authorization"},             // the end
	} {
		resp, body := c.do(http.MethodOptions, "", preflightOf(tc.method, tc.headers)...)
		assertPreflightGranted(t, resp, tc.method, tc.headers)
		assert.Empty(t, body)
	}
	ts.noneAccepted(t)

	t.Run("the request itself still needs the token", func(t *testing.T) {
		assert.Equal(t, http.StatusUnauthorized, tryHTTP(t, ts, "Origin", pageOrigin))
		assert.Equal(t, http.StatusOK, tryHTTP(t, ts, "Origin", pageOrigin, "Authorization", "Bearer s3cret"))
		ts.noneAccepted(t)
	})
	t.Run("a foreign origin gets no preflight", func(t *testing.T) {
		preflight := preflightOf(http.MethodPost, "authorization,content-type")
		preflight[slices.Index(preflight, pageOrigin)] = "https://evil.example"
		resp, _ := c.do(http.MethodOptions, "", preflight...)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		assert.Empty(t, resp.Header.Values("Access-Control-Allow-Origin"))
	})
	t.Run("a preflight without an origin is no preflight", func(t *testing.T) {
		resp, _ := c.do(http.MethodOptions, "", "Access-Control-Request-Method", "POST")
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a program's OPTIONS is a request like any other")
	})
}

// TestRefusalOfAllowedOriginIsReadableByThePage refuses requests of pages
// for each reason a page of an allowed origin can meet (a peer address
// not allowed, no token): the answer carries the CORS headers, so the page
// can read its status and tell why. A page the server does not let in
// (a foreign origin, or a page under a Host not allowed, as DNS rebinding
// makes one) learns nothing.
func TestRefusalOfAllowedOriginIsReadableByThePage(t *testing.T) {
	s := NewServer(nil, &Options{AllowedOrigins: []string{pageOrigin}, Authenticate: BearerToken("s3cret")})
	defer s.Close()
	for _, tc := range []struct {
		name, peer, host, origin string
		status                   int
		readable                 bool
	}{
		{"no token", "127.0.0.1:5555", "localhost:8080", pageOrigin, http.StatusUnauthorized, true},
		{"a peer not allowed", "203.0.113.7:5555", "localhost:8080", pageOrigin, http.StatusForbidden, true},
		{"a foreign origin", "127.0.0.1:5555", "localhost:8080", "https://evil.example", http.StatusForbidden, false},
		{"a foreign origin from a peer not allowed", "203.0.113.7:5555", "localhost:8080", "https://evil.example", http.StatusForbidden, false},
		{"a rebound name, its own page", "127.0.0.1:5555", "evil.example:8080", "http://evil.example:8080", http.StatusForbidden, false},
		{"an allowed origin under a host not allowed", "127.0.0.1:5555", "evil.example:8080", pageOrigin, http.StatusForbidden, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
				r := httptest.NewRequest(method, "http://"+tc.host+"/acp", strings.NewReader(initRequest))
				r.RemoteAddr = tc.peer
				r.Header.Set("Origin", tc.origin)
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r) // a nil AcceptFunc panics if it is ever reached
				assert.Equal(t, tc.status, w.Code, "%s: %s", method, w.Body)
				if tc.readable {
					assert.Equal(t, pageOrigin, w.Header().Get("Access-Control-Allow-Origin"), method)
					assert.Equal(t, "true", w.Header().Get("Access-Control-Allow-Credentials"), method)
				} else {
					for name := range w.Header() {
						assert.NotContains(t, name, "Access-Control-", "%s: a page refused for where it comes from learns nothing", method)
					}
				}
			}
		})
	}
}
