package remote

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every security check is tried on both transports: a WebSocket upgrade
// and the POST of initialize that opens a Streamable HTTP connection. Each
// refused attempt must not reach the AcceptFunc.

// tryWebSocket attempts a WebSocket connection with the given Host (empty
// for the URL's) and headers, and returns the upgrade's status.
func tryWebSocket(t *testing.T, ts *testServer, host string, headers ...string) int {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ws, resp, err := websocket.Dial(ctx, ts.url("ws"), &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: tr}, HTTPHeader: h, Host: host,
	})
	if err == nil {
		ws.CloseNow()
		_ = ts.next(t).Close()
		return http.StatusSwitchingProtocols
	}
	require.NotNil(t, resp, "the upgrade got an answer: %v", err)
	return resp.StatusCode
}

// tryHTTP attempts to open a Streamable HTTP connection and returns the
// status of the POST of initialize. When it is let through, the test plays
// the agent's answer.
func tryHTTP(t *testing.T, ts *testServer, headers ...string) int {
	t.Helper()
	c := newRawHTTP(t, ts.url("http"))
	got := make(chan int, 1)
	go func() {
		resp, _ := c.do(http.MethodPost, initRequest, headers...)
		got <- resp.StatusCode
	}()
	return playInitialize(t, ts, got)
}

// playInitialize waits for the status of a POST of initialize, sent to ts
// beside it, which got receives; if the server lets it through, it plays
// the agent's answer first, and closes the connection after.
func playInitialize(t *testing.T, ts *testServer, got <-chan int) int {
	t.Helper()
	select {
	case status := <-got:
		return status
	case tr := <-ts.accepted:
		<-ts.requests
		require.Equal(t, initRequest, recvMsg(t, tr))
		send(t, tr, initAnswer)
		status := <-got
		_ = tr.Close()
		return status
	}
}

func TestForeignOriginIsRefused(t *testing.T) {
	ts := startServer(t, &Options{AllowedOrigins: []string{"https://editor.example"}})
	own := "http://" + ts.addr
	for _, tc := range []struct {
		origin string
		status int
	}{
		{"https://evil.example", http.StatusForbidden},
		{"http://localhost:1", http.StatusForbidden}, // another page on this machine is another site
		{"null", http.StatusForbidden},
		{"https://" + ts.addr, http.StatusForbidden}, // the right host, the wrong scheme
		{own, 0},                      // the server's own pages
		{"https://editor.example", 0}, // a listed origin
		{"", 0},                       // no Origin: a program, not a browser
	} {
		t.Run("origin "+tc.origin, func(t *testing.T) {
			var headers []string
			if tc.origin != "" {
				headers = []string{"Origin", tc.origin}
			}
			wantWS, wantHTTP := tc.status, tc.status
			if tc.status == 0 {
				wantWS, wantHTTP = http.StatusSwitchingProtocols, http.StatusOK
			}
			assert.Equal(t, wantWS, tryWebSocket(t, ts, "", headers...))
			assert.Equal(t, wantHTTP, tryHTTP(t, ts, headers...))
			ts.noneAccepted(t)
		})
	}
	t.Run("every later request too", func(t *testing.T) {
		c := newRawHTTP(t, ts.url("http"))
		id, server := c.initialize(ts)
		defer server.Close()
		resp, _ := c.do(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream", "Origin", "https://evil.example")
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp, _ = c.do(http.MethodDelete, "", HeaderConnectionID, id, "Origin", "https://evil.example")
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

func TestRebindingHostIsRefused(t *testing.T) {
	ts := startServer(t, &Options{AllowedHosts: []string{"agent.example"}})
	_, port, _ := net.SplitHostPort(ts.addr)
	for _, tc := range []struct {
		host   string
		status int
	}{
		{"evil.example:" + port, http.StatusForbidden}, // a name the attacker points at 127.0.0.1
		{"localhost.evil.example", http.StatusForbidden},
		{"localhost:" + port, 0},
		{"app.localhost:" + port, 0},
		{"[::1]:" + port, 0},
		{"127.0.0.2", 0},
		{"AGENT.example:" + port, 0},
	} {
		t.Run("host "+tc.host, func(t *testing.T) {
			wantWS, wantHTTP := tc.status, tc.status
			if tc.status == 0 {
				wantWS, wantHTTP = http.StatusSwitchingProtocols, http.StatusOK
			}
			assert.Equal(t, wantWS, tryWebSocket(t, ts, tc.host))
			assert.Equal(t, wantHTTP, tryHTTP(t, ts, "Host", tc.host))
			ts.noneAccepted(t)
		})
	}
}

func TestRemotePeerIsRefusedUnlessAllowed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed []netip.Prefix
		peer    string
		status  int
	}{
		{"a remote peer by default", nil, "203.0.113.7:5555", http.StatusForbidden},
		{"a remote peer outside the allowed networks", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "203.0.113.7:5555", http.StatusForbidden},
		{"a remote peer inside them", []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}, "203.0.113.7:5555", http.StatusBadRequest},
		{"loopback", nil, "127.0.0.1:5555", http.StatusBadRequest},
		{"IPv6 loopback", nil, "[::1]:5555", http.StatusBadRequest},
		{"IPv4-mapped loopback", nil, "[::ffff:127.0.0.1]:5555", http.StatusBadRequest},
		{"an unparsable peer", nil, "pipe", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(nil, &Options{AllowedPeers: tc.allowed})
			defer s.Close()
			for _, r := range []*http.Request{
				httptest.NewRequest(http.MethodGet, "http://localhost/acp", nil),  // as a WebSocket upgrade
				httptest.NewRequest(http.MethodPost, "http://localhost/acp", nil), // as Streamable HTTP
			} {
				r.RemoteAddr = tc.peer
				if r.Method == http.MethodGet {
					r.Header.Set("Upgrade", "websocket")
					r.Header.Set("Connection", "Upgrade")
				} else {
					r.Header.Set("Content-Type", "application/json")
					r.Body = io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","method":"not/initialize"}`))
				}
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r) // a nil AcceptFunc panics if it is ever reached
				assert.Equal(t, tc.status, w.Code, "%s from %s: %s", r.Method, tc.peer, w.Body)
			}
		})
	}
}

func TestAuthenticationRefusesBeforeAnythingRuns(t *testing.T) {
	ts := startServer(t, &Options{Authenticate: BearerToken("s3cret")})
	for _, tc := range []struct {
		name, auth string
		ok         bool
	}{
		{"no credentials", "", false},
		{"a wrong token", "Bearer guess", false},
		{"the token as Basic", "Basic s3cret", false},
		{"a token prefix", "Bearer s3cre", false},
		{"the token", "Bearer s3cret", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var headers []string
			if tc.auth != "" {
				headers = []string{"Authorization", tc.auth}
			}
			wantWS, wantHTTP := http.StatusUnauthorized, http.StatusUnauthorized
			if tc.ok {
				wantWS, wantHTTP = http.StatusSwitchingProtocols, http.StatusOK
			}
			assert.Equal(t, wantWS, tryWebSocket(t, ts, "", headers...))
			assert.Equal(t, wantHTTP, tryHTTP(t, ts, headers...))
			ts.noneAccepted(t)
		})
	}
	t.Run("every later request too", func(t *testing.T) {
		c := newRawHTTP(t, ts.url("http"))
		ok := []string{"Authorization", "Bearer s3cret"}
		got := make(chan string, 1)
		go func() {
			resp, _ := c.do(http.MethodPost, initRequest, ok...)
			got <- resp.Header.Get(HeaderConnectionID)
		}()
		server := ts.next(t)
		defer server.Close()
		require.Equal(t, initRequest, recvMsg(t, server))
		send(t, server, initAnswer)
		id := <-got
		resp, _ := c.do(http.MethodPost, `{"jsonrpc":"2.0","method":"n"}`, HeaderConnectionID, id)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a connection ID is no credential")
		resp, _ = c.do(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream")
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	})
	t.Run("the client sends its header with every request", func(t *testing.T) {
		client, server := openHTTPPair(t, ts, &DialOptions{Header: http.Header{"Authorization": {"Bearer s3cret"}}})
		deliver(t, client, server, `{"jsonrpc":"2.0","method":"n"}`)
		deliver(t, server, client, `{"jsonrpc":"2.0","method":"m"}`)
	})
}

// TestBearerTokenSchemeIsCaseInsensitive checks BearerToken against RFC
// 7235 (the auth scheme is a case-insensitive token, followed by one or
// more spaces) and RFC 6750 (a 401 names the scheme it wants in
// WWW-Authenticate). The token itself is compared exactly.
func TestBearerTokenSchemeIsCaseInsensitive(t *testing.T) {
	check := BearerToken("s3cret")
	for _, tc := range []struct {
		header string
		ok     bool
	}{
		{"Bearer s3cret", true},
		{"bearer s3cret", true},
		{"BEARER s3cret", true},
		{"bEaReR s3cret", true},
		{"Bearer   s3cret", true}, // 1*SP
		{"Bearer S3CRET", false},  // the token is not case-insensitive
		{"Bearer s3cret ", false},
		{"Bearer\ts3cret", false},
		{"Bearers3cret", false},
		{"Bearer", false},
		{"Bearer ", false},
		{"Basic s3cret", false},
		{"Bearer s3cre", false},
		{"Bearer s3cretx", false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/acp", nil)
		r.Header.Set("Authorization", tc.header)
		if tc.ok {
			assert.NoError(t, check(r), "%q", tc.header)
		} else {
			assert.ErrorIs(t, check(r), ErrUnauthorized, "%q", tc.header)
		}
	}

	ts := startServer(t, &Options{Authenticate: check})
	assert.Equal(t, http.StatusSwitchingProtocols, tryWebSocket(t, ts, "", "Authorization", "bearer s3cret"))
	assert.Equal(t, http.StatusOK, tryHTTP(t, ts, "Authorization", "bearer s3cret"))
	resp, _ := newRawHTTP(t, ts.url("http")).do(http.MethodPost, initRequest)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "Bearer", resp.Header.Get("WWW-Authenticate"), "a 401 says which scheme it wants")
	ts.noneAccepted(t)
}

// TestBearerTokenTimeTellsNotItsLength times BearerToken's check of two
// wrong headers as long as each other, one exactly as long as the right
// one and one a byte longer. A comparison that stops at a length mismatch
// answers the second at once and the first only after reading every
// byte, which tells an attacker the token's length; compared by digests,
// both take the same time. The token is long enough (1 MiB) that the
// difference is thousands of times the noise; the fastest of 31 runs of
// each, taken in turns, is compared, which a loaded machine only slows
// down.
func TestBearerTokenTimeTellsNotItsLength(t *testing.T) {
	token := strings.Repeat("k", 1<<20)
	check := BearerToken(token)
	request := func(header string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/acp", nil)
		r.Header.Set("Authorization", header)
		return r
	}
	same := request("Bearer " + strings.Repeat("x", len(token)))
	other := request("Bearer " + strings.Repeat("x", len(token)+1))
	timed := func(r *http.Request) time.Duration {
		start := time.Now()
		require.ErrorIs(t, check(r), ErrUnauthorized)
		return time.Since(start)
	}
	// Interleaved, so that a busy spell of the machine slows both alike.
	sameLength, longer := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range 31 {
		sameLength = min(sameLength, timed(same))
		longer = min(longer, timed(other))
	}
	t.Logf("a wrong token of the right length: %v; one byte longer: %v", sameLength, longer)
	assert.Greater(t, longer, sameLength/4, "a header of another length is refused faster: the time tells the token's length")
	right := httptest.NewRequest(http.MethodPost, "/acp", nil)
	right.Header.Set("Authorization", "Bearer "+token)
	assert.NoError(t, check(right))
}

func TestConnectionLimitRefusesOneMore(t *testing.T) {
	ts := startServer(t, &Options{MaxConnections: 2})
	dial(t, ts.url("ws"), nil)
	_ = ts.next(t)
	secondClient, second := openHTTPPair(t, ts, nil)
	assert.Equal(t, 2, ts.Connections())

	assert.Equal(t, http.StatusServiceUnavailable, tryWebSocket(t, ts, ""))
	assert.Equal(t, http.StatusServiceUnavailable, tryHTTP(t, ts))
	ts.noneAccepted(t)

	require.NoError(t, second.Close())
	// Its place is free once its SSE stream has ended, which its client
	// sees as the end of the connection.
	_, err := recv(t, secondClient)
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, http.StatusOK, tryHTTP(t, ts), "a closed connection makes room")
}

// TestInitializeKeepsItsPlaceUntilItsConnectionOpens fills the server's
// one place with a POST of initialize and, once its body is read and
// before its connection opens, tries another connection over each
// transport. The place is the initialize's from before its body was read:
// the newcomers get 503, and the initialize its connection. Had the place
// been given back first, a newcomer would take it and the initialize,
// whose body the server had already read, would be refused.
func TestInitializeKeepsItsPlaceUntilItsConnectionOpens(t *testing.T) {
	read, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	saved := testHookInitializeRead
	t.Cleanup(func() { testHookInitializeRead = saved }) // after the server's Close: registered before it
	testHookInitializeRead = func() {
		first.Do(func() {
			close(read)
			<-release
		})
	}
	ts := startServer(t, &Options{MaxConnections: 1})
	c := newRawHTTP(t, ts.url("http"))
	got := make(chan int, 1)
	go func() {
		resp, _ := c.do(http.MethodPost, initRequest)
		got <- resp.StatusCode
	}()
	<-read

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, ts.url("ws"), nil)
	if err == nil {
		defer ws.CloseNow()
		defer ts.next(t).Close() // holding the place it took until the end
		t.Error("a WebSocket upgrade took the place of an initialize whose body was read")
	} else {
		require.NotNil(t, resp, err)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a WebSocket upgrade while the place is taken")
	}
	assert.Equal(t, http.StatusServiceUnavailable, tryHTTP(t, ts), "an initialize while the place is taken")

	close(release)
	assert.Equal(t, http.StatusOK, playInitialize(t, ts, got), "the initialize that held the place")
	ts.noneAccepted(t)
}

func TestOverLongInitializeIsRefused(t *testing.T) {
	ts := startServer(t, &Options{MaxMessageSize: 100})
	c := newRawHTTP(t, ts.url("http"))
	resp, _ := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"pad":"`+strings.Repeat("a", 200)+`"}}`)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	ts.noneAccepted(t)
}

func TestSlowHeadersAreCutOff(t *testing.T) {
	ts := startServer(t, &Options{ReadHeaderTimeout: 50 * time.Millisecond})
	conn, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(wait)))
	_, err = io.WriteString(conn, "GET /acp HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n") // and never the rest
	require.NoError(t, err)
	rest, err := io.ReadAll(bufio.NewReader(conn)) // ends when the server hangs up
	require.NoError(t, err, "the server closed the connection before the test's deadline")
	assert.NotContains(t, string(rest), "101")
	ts.noneAccepted(t)
}

func TestIdleHTTPConnectionIsClosed(t *testing.T) {
	ts := startServer(t, &Options{IdleTimeout: 50 * time.Millisecond})
	c := newRawHTTP(t, ts.url("http"))
	_, server := c.initialize(ts) // and never opens the connection's stream
	_, err := recv(t, server)
	require.ErrorContains(t, err, "no SSE stream open for 50ms")
	assert.Zero(t, ts.Connections())
}

// TestHTTPConnectionWithItsStreamOpenStaysOpen holds a connection's stream
// open for four idle timeouts of keep-alives: the connection stays open.
// The idle clock runs from initialize until the stream opens, so a machine
// too loaded to send the GET within IdleTimeout finds the connection gone
// (404): that round proves nothing, and the test tries again.
func TestHTTPConnectionWithItsStreamOpenStaysOpen(t *testing.T) {
	ts := startServer(t, &Options{IdleTimeout: 50 * time.Millisecond, KeepAlive: 5 * time.Millisecond})
	for range 10 {
		c := newRawHTTP(t, ts.url("http"))
		id, server := c.initialize(ts)
		resp := c.open(http.MethodGet, "", HeaderConnectionID, id, "Accept", "text/event-stream")
		if resp.StatusCode == http.StatusNotFound {
			resp.Body.Close()
			_, err := recv(t, server)
			require.ErrorContains(t, err, "no SSE stream open for 50ms", "gone before its stream opened, and only so")
			continue
		}
		require.Equal(t, http.StatusOK, resp.StatusCode)
		events := sseEvents(resp)
		received := make(chan error, 1)
		go func() { _, err := server.Recv(); received <- err }()
		for range 40 { // 200ms of keep-alives: four idle timeouts
			ev, open := <-events
			require.True(t, open, "the stream ended")
			assert.Equal(t, "", ev)
		}
		select {
		case err := <-received:
			t.Fatalf("a connection with its stream open was closed: %v", err)
		default:
		}
		require.NoError(t, server.Close())
		assert.ErrorIs(t, <-received, io.EOF)
		for range events {
		}
		return
	}
	t.Fatal("in 10 rounds, no GET came within the idle timeout of its initialize")
}

func TestHTTPClientThatReadsNothingIsDisconnected(t *testing.T) {
	ts := startServer(t, &Options{MaxQueuedBytes: 1024, WriteTimeout: 50 * time.Millisecond})
	c := newRawHTTP(t, ts.url("http"))
	_, server := c.initialize(ts) // never reads its streams
	msg := []byte(`{"jsonrpc":"2.0","method":"n","params":"` + strings.Repeat("a", 500) + `"}`)
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		err = server.Send(msg)
	}
	require.ErrorContains(t, err, "the client read nothing for 50ms")
	assert.LessOrEqual(t, server.(*httpConn).queued, 1024+len(msg), "what it could make the server hold")
	assert.Zero(t, ts.Connections())
}

func TestHTTPSessionStreamsAreBounded(t *testing.T) {
	ts := startServer(t, &Options{MaxSessions: 2})
	c := newRawHTTP(t, ts.url("http"))
	id, server := c.initialize(ts)
	var streams []<-chan string
	for _, s := range []string{"a", "b"} {
		resp := c.open(http.MethodGet, "", HeaderConnectionID, id, HeaderSessionID, s, "Accept", "text/event-stream")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		streams = append(streams, sseEvents(resp))
	}
	resp, body := c.do(http.MethodGet, "", HeaderConnectionID, id, HeaderSessionID, "c", "Accept", "text/event-stream")
	assert.Equal(t, http.StatusConflict, resp.StatusCode, body)

	// The agent's own messages for one session too many close the connection.
	err := server.Send([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c"}}`))
	require.ErrorIs(t, err, errTooManySessions)
	_, err = recv(t, server)
	require.ErrorIs(t, err, errTooManySessions)
	for _, s := range streams {
		for range s {
		}
	}
}

func TestTLSWhenGivenACertificate(t *testing.T) {
	cert, pool := selfSignedCertificate(t)
	ts := startServer(t, &Options{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
	trusting := &DialOptions{TLSConfig: &tls.Config{RootCAs: pool}}

	client := dial(t, ts.url("wss"), trusting)
	send(t, client, initRequest)
	server := ts.next(t)
	assert.Equal(t, initRequest, recvMsg(t, server))
	deliver(t, server, client, `{"jsonrpc":"2.0","method":"over/tls"}`)

	hclient, hserver := openHTTPPair(t, ts, trusting)
	deliver(t, hclient, hserver, `{"jsonrpc":"2.0","method":"over/tls"}`)

	t.Run("a client that does not trust the certificate", func(t *testing.T) {
		_, err := Dial(context.Background(), ts.url("wss"), nil)
		require.ErrorContains(t, err, "certificate")
		tr, err := Dial(context.Background(), ts.url("https"), nil)
		require.NoError(t, err)
		defer tr.Close()
		require.ErrorContains(t, tr.Send([]byte(initRequest)), "certificate")
		ts.noneAccepted(t)
	})
	t.Run("plain text to the TLS port", func(t *testing.T) {
		_, err := Dial(context.Background(), ts.url("ws"), nil)
		require.Error(t, err)
		ts.noneAccepted(t)
	})
}

// selfSignedCertificate makes a certificate for 127.0.0.1 and localhost,
// and a pool that trusts it.
func selfSignedCertificate(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "acprpc test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func TestAllowedOriginGetsWhatABrowserNeeds(t *testing.T) {
	ts := startServer(t, &Options{AllowedOrigins: []string{"https://editor.example"}})
	c := newRawHTTP(t, ts.url("http"))
	preflight := []string{"Origin", "https://editor.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "content-type, acp-connection-id"}
	resp, _ := c.do(http.MethodOptions, "", preflight...)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, "https://editor.example", resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), HeaderConnectionID)
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")

	preflight[1] = "https://evil.example"
	resp, _ = c.do(http.MethodOptions, "", preflight...)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a foreign page gets no preflight either")
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))

	got := make(chan *http.Response, 1)
	go func() {
		resp, _ := c.do(http.MethodPost, initRequest, "Origin", "https://editor.example")
		got <- resp
	}()
	server := ts.next(t)
	defer server.Close()
	require.Equal(t, initRequest, recvMsg(t, server))
	send(t, server, initAnswer)
	resp = <-got
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "https://editor.example", resp.Header.Get("Access-Control-Allow-Origin"))
	exposed := headerList(resp.Header.Get("Access-Control-Expose-Headers"))
	assert.Contains(t, exposed, strings.ToLower(HeaderConnectionID), "the page can read its connection's ID")
	assert.Contains(t, exposed, strings.ToLower(HeaderSingleStream), "the page can read whether it has one stream")
}
