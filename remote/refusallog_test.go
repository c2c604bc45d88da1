package remote

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// fakeClock is a refusalLog's clock, moved by the test.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// refusedPost sends s a POST of initialize with headers (name, value
// pairs; "Host" sets the request's Host) from a loopback peer, and returns
// its status.
func refusedPost(s *Server, headers ...string) int {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+DefaultPath, strings.NewReader(initRequest))
	r.RemoteAddr = "127.0.0.1:40000"
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			r.Host = headers[i+1]
		} else {
			r.Header.Set(headers[i], headers[i+1])
		}
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w.Code
}

// A refusal is logged at once, through Options.Logger, saying what to
// change; more of its kind within refusalLogEvery are counted, not logged,
// and the next line gives their count. Each kind has its own allowance.
func TestRefusalsAreLoggedRateLimited(t *testing.T) {
	log := &wiretest.Recorder{}
	s := NewServer(func(acprpc.Transport, *http.Request) { panic("accepted") }, &Options{
		Logger: log.Logger(), Authenticate: BearerToken("s3cret"),
	})
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	s.refusals.now = clock.now

	for range 3 {
		require.Equal(t, http.StatusForbidden, refusedPost(s, "Origin", "https://evil.example"))
	}
	require.Equal(t, http.StatusForbidden, refusedPost(s, "Host", "rebind.example:8080"))
	require.Equal(t, http.StatusUnauthorized, refusedPost(s))
	require.Equal(t, http.StatusUnauthorized, refusedPost(s, "Authorization", "Bearer wrong"))

	lines := log.Logged()
	require.Len(t, lines, 3, "one line per kind: %v", lines)
	assert.Equal(t, slog.LevelWarn, lines[0].Level)
	assert.Equal(t, "remote: request refused: a browser page of another origin; list it in Options.AllowedOrigins if it may connect", lines[0].Message)
	assert.Equal(t, map[string]string{"status": "403", "reason": "Forbidden: origin not allowed", "peer": "127.0.0.1:40000",
		"method": "POST", "host": "127.0.0.1", "origin": "https://evil.example"}, lines[0].Attrs)
	assert.Equal(t, "remote: request refused: the Host header names neither this machine's loopback nor one of Options.AllowedHosts; "+
		"list the server's name there if clients reach it by that name (a foreign name is also what DNS rebinding sends)", lines[1].Message)
	assert.Equal(t, "rebind.example:8080", lines[1].Attrs["host"])
	assert.Equal(t, "remote: request refused: the request has no Authorization: Bearer header with the server's token, or a wrong one; "+
		"a Go client sends it with DialOptions.Header", lines[2].Message)
	assert.Equal(t, "401", lines[2].Attrs["status"])

	clock.t = clock.t.Add(refusalLogEvery - time.Nanosecond)
	require.Equal(t, http.StatusForbidden, refusedPost(s, "Origin", "https://evil.example"))
	require.Len(t, log.Logged(), 3, "still within the period")
	clock.t = clock.t.Add(time.Nanosecond)
	require.Equal(t, http.StatusForbidden, refusedPost(s, "Origin", "https://evil.example"))
	lines = log.Logged()
	require.Len(t, lines, 4)
	assert.Equal(t, lines[0].Message, lines[3].Message)
	assert.Equal(t, "3", lines[3].Attrs["not_logged_since_last"], "the refusals left out since the last line")
}

// However many kinds of refusal come, the log keeps at most
// maxRefusalKinds entries and one they share; a header a peer chose is
// cut short.
func TestRefusalLogIsBounded(t *testing.T) {
	log := &wiretest.Recorder{}
	l := newRefusalLog(log.Logger())
	r := httptest.NewRequest(http.MethodGet, "http://x"+DefaultPath, nil)
	r.Host = strings.Repeat("h", 10_000)
	for i := range 1000 {
		l.refused(r, &refusal{http.StatusForbidden, "Forbidden: kind " + strconv.Itoa(i)})
	}
	assert.LessOrEqual(t, len(l.kinds), maxRefusalKinds+1)
	assert.Len(t, log.Logged(), maxRefusalKinds+1, "one line per kind kept apart, one for all the others")
	assert.Equal(t, strings.Repeat("h", maxLoggedHeader)+"...", log.Logged()[0].Attrs["host"])
}

// A connection over MaxConnections is logged, naming the bound; a
// refusal while the Server shuts down is not.
func TestConnectionLimitIsLogged(t *testing.T) {
	log := &wiretest.Recorder{}
	ts := startServer(t, &Options{MaxConnections: 1, Logger: log.Logger()})
	_, first := openHTTPPair(t, ts, nil)
	assert.Equal(t, http.StatusServiceUnavailable, tryHTTP(t, ts))
	lines := log.Logged()
	require.Len(t, lines, 1, "%v", lines)
	assert.Equal(t, "remote: request refused: Options.MaxConnections connections are open; raise it, "+
		"or find the client that opens connections and never closes them", lines[0].Message)
	assert.Equal(t, "503", lines[0].Attrs["status"])
	require.NoError(t, first.Close())

	ts.Server.refusals.refused(httptest.NewRequest(http.MethodGet, "/", nil), errShuttingDown)
	assert.Len(t, log.Logged(), 1, "a refusal while shutting down is not logged")
}
