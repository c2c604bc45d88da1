package remote

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// headerProxy is a reverse proxy to target that sets Acp-Single-Stream: 1
// on every request (add), or drops the header from every answer (strip),
// as a proxy that knows the header, or one that lets only known headers
// through, would. agreed reports whether an answer said one stream.
func headerProxy(t *testing.T, target string, add, strip bool) (proxied string, agreed *atomic.Bool) {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	p := &httputil.ReverseProxy{
		FlushInterval: -1, // SSE events as they come
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host}) // the path as the client sends it
			r.Out.Host = u.Host                                // the server allows its own loopback names only
			if add {
				r.Out.Header.Set(HeaderSingleStream, "1")
			}
		},
	}
	agreed = &atomic.Bool{}
	p.ModifyResponse = func(resp *http.Response) error {
		if resp.Header.Get(HeaderSingleStream) == "1" {
			agreed.Store(true)
		}
		if strip {
			resp.Header.Del(HeaderSingleStream)
		}
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL + u.Path, agreed
}

// The TypeScript client, behind a proxy that asks for one stream on its
// behalf, still drives a turn to its cancelled end: the server sends it
// every message on the connection's stream, which it reads, and it ignores
// the answer's header.
func TestTypeScriptClientBehindAProxyThatAsksForOneStream(t *testing.T) {
	node := requireNode(t)
	agent := startListening(t, ".", demoAgent(t), "-listen", "127.0.0.1:0")
	defer agent.stop(t)
	proxied, agreed := headerProxy(t, agent.urlFor("http"), true, false)
	for _, scenario := range []string{"session-cancel", "request-cancel"} {
		t.Run(scenario, func(t *testing.T) {
			runTypeScriptClient(t, node, "http", proxied, scenario)
		})
	}
	assert.True(t, agreed.Load(), "the server agreed on one stream")
}

// acprpc's client behind a proxy that drops the answer's
// Acp-Single-Stream reads a stream per session, which stay empty, while
// the server sends everything on the connection's stream: each message
// still comes, and in the order sent.
func TestAcprpcClientBehindAProxyThatDropsTheAnswersHeader(t *testing.T) {
	for _, c := range orderCases {
		t.Run(c.name, func(t *testing.T) {
			as := startAgent(t, orderedAgent(), nil, nil)
			counts := &handledCounts{}
			proxied, _ := headerProxy(t, as.url("http"), false, true)
			client, tr := connectClientAt(t, proxied, counts, nil)
			require.False(t, tr.(*httpClient).single, "the proxy dropped the answer's header")
			require.True(t, (<-as.transports).(*httpConn).single, "the server got the request's")
			c.rounds(t, client, counts)
		})
	}
}

// acprpc's client behind a proxy that asks for one stream on every
// request, of the TypeScript server, which does not know the header,
// drives its turns to their cancelled end.
func TestAcprpcClientOfTheTypeScriptServerBehindAProxyThatAsksForOneStream(t *testing.T) {
	node := requireNode(t)
	agent := startListening(t, interopDir(), node, "--import", "tsx", filepath.Join("src", "remote-agent.ts"))
	defer agent.stop(t)
	proxied, agreed := headerProxy(t, agent.urlFor("http"), true, false)
	for _, how := range []string{"session/cancel", "$/cancel_request"} {
		t.Run(how, func(t *testing.T) { driveTypeScriptAgent(t, proxied, how) })
	}
	assert.False(t, agreed.Load(), "the TypeScript server does not answer the header")
}
