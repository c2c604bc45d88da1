package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/examples/internal/demo"
	"github.com/acpkit/acprpc/remote"
)

// With -listen, an interrupt mid-turn drains the server: while the turn
// winds down (the client has not yet confirmed the requests the agent
// cancelled), a new connection over either transport is refused with 503;
// the turn is cancelled, its nested requests are cancelled by the agent's
// own $/cancel_request, the prompt is answered "cancelled", and the agent
// exits with status 0.
func TestListenShutsDownGracefully(t *testing.T) {
	for _, scheme := range []string{"ws", "http"} {
		t.Run(scheme, func(t *testing.T) {
			proc, url, err := demo.StartListeningAgent(agentBin, nil)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			tr, err := remote.Dial(ctx, scheme+strings.TrimPrefix(url, "http"), nil)
			require.NoError(t, err)
			arrived := make(chan string, 2)
			causes := make(chan error, 2)
			confirm := make(chan struct{})
			held := func(ctx context.Context, req *acprpc.Request) (any, error) {
				arrived <- req.Method
				<-ctx.Done()
				causes <- context.Cause(ctx)
				<-confirm // the agent waits for this answer, which holds the drain open
				return nil, context.Cause(ctx)
			}
			client := acprpc.NewConn(ctx, tr, acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
				switch req.Method {
				case acpv1.MethodSessionRequestPermission, acpv1.MethodTerminalCreate:
					return held(ctx, req)
				}
				return nil, nil
			}), nil)
			defer client.Close()

			require.NoError(t, client.Call(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"terminal": true}}, nil))
			var sess struct {
				SessionID string `json:"sessionId"`
			}
			require.NoError(t, client.Call(ctx, "session/new", map[string]any{"cwd": "/", "mcpServers": []any{}}, &sess))
			turn := make(chan json.RawMessage, 1)
			go func() {
				var res json.RawMessage
				_ = client.Call(ctx, "session/prompt", map[string]any{"sessionId": sess.SessionID,
					"prompt": []map[string]string{{"type": "text", "text": "slow: analyze file X"}}}, &res)
				turn <- res
			}()
			<-arrived
			<-arrived

			require.NoError(t, proc.Signal(os.Interrupt))
			for range 2 {
				assert.ErrorIs(t, <-causes, acprpc.ErrPeerCancelled, "cancelled by the agent's own $/cancel_request")
			}
			_, err = remote.Dial(ctx, "ws"+strings.TrimPrefix(url, "http"), nil)
			assert.ErrorContains(t, err, "503", "a new WebSocket connection during the drain")
			resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`))
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a new Streamable HTTP connection during the drain")
			assert.NotEmpty(t, resp.Header.Get("Retry-After"))
			close(confirm)
			assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(<-turn))
			require.NoError(t, proc.Wait(), "the agent exits with status 0")
			<-client.Done()
		})
	}
}

// The flags of -listen widen the loopback-only defaults where a deployment
// needs it: behind a balancer published as acp.example.test, a replica
// without -allow-host refuses every request (403); with it, and with
// -token-file, it answers the requests that carry the token and refuses
// the others (401).
func TestListenFlagsAdmitTheBalancersName(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("s3cret\n"), 0o600))
	post := func(url string, headers ...string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`))
		require.NoError(t, err)
		req.Host = "acp.example.test"
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}

	plain, url, err := demo.StartListeningAgent(agentBin, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, post(url).StatusCode, "the defaults answer this machine's names only")
	require.NoError(t, plain.Stop())

	proc, url, err := demo.StartListeningAgent(agentBin, nil, "-allow-host", "acp.example.test", "-allow-peer", "10.0.0.0/8,192.0.2.7", "-token-file", token)
	require.NoError(t, err)
	defer func() { require.NoError(t, proc.Stop()) }()
	assert.Equal(t, http.StatusUnauthorized, post(url).StatusCode, "no token")
	assert.Equal(t, http.StatusUnauthorized, post(url, "Authorization", "Bearer wrong").StatusCode)
	resp := post(url, "Authorization", "Bearer s3cret")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get(remote.HeaderConnectionID))
}

// With -allow-origin and -token-file, a page of the allowed origin can use
// the agent: its preflight, which a browser sends without credentials, is
// granted, and the request after it is served with the token and refused
// without it, in answers the page may read.
func TestListenFlagsLetAnAllowedPageSendItsToken(t *testing.T) {
	const origin = "https://editor.example"
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("s3cret\n"), 0o600))
	proc, url, err := demo.StartListeningAgent(agentBin, nil, "-allow-origin", origin, "-token-file", token)
	require.NoError(t, err)
	defer func() { require.NoError(t, proc.Stop()) }()
	send := func(method string, headers ...string) *http.Response {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
		}
		req, err := http.NewRequest(method, url, body)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}

	resp := send(http.MethodOptions, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode, "the preflight")
	assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "authorization")

	resp = send(http.MethodPost)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token")
	assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"), "the page may read why")
	resp = send(http.MethodPost, "Authorization", "Bearer s3cret")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
}

// A flag that cannot be read, or one of -listen's without -listen, stops
// the agent with status 2 before it serves anything.
func TestListenFlagsRefuseWhatTheyCannotRead(t *testing.T) {
	for name, args := range map[string][]string{
		"bad peer":      {"-listen", "127.0.0.1:0", "-allow-peer", "10.0.0.0/33"},
		"missing token": {"-listen", "127.0.0.1:0", "-token-file", filepath.Join(t.TempDir(), "none")},
		"no -listen":    {"-allow-host", "acp.example.test"},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := demo.StartAgent(agentBin, nil, args...)
			require.NoError(t, err)
			var exit interface{ ExitCode() int }
			require.ErrorAs(t, p.Wait(), &exit)
			assert.Equal(t, 2, exit.ExitCode())
		})
	}
}

func TestParsePeer(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.0/8": "10.0.0.0/8", "10.1.2.3/8": "10.0.0.0/8", "192.0.2.7": "192.0.2.7/32", "2001:db8::1": "2001:db8::1/128"} {
		got, err := parsePeer(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got.String())
	}
	_, err := parsePeer("example.com")
	assert.ErrorContains(t, err, "neither a network")
}
