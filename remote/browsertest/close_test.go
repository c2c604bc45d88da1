package browsertest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/acpkit/acprpc/remote"
)

// closingPage initializes over a WebSocket, sends x/wait, and closes the
// socket (close() without a code: a close frame without a status) once
// the agent says x/wait runs. It records what it received.
const closingPage = `<!doctype html>
<title>acprpc remote: a page closes mid-request</title>
<pre id="result"></pre>
<script>
const got = [], ws = new WebSocket(AGENT);
ws.onopen = () => ws.send(JSON.stringify({jsonrpc: "2.0", id: 0, method: "initialize", params: {protocolVersion: 1}}));
ws.onmessage = e => {
  const m = JSON.parse(e.data);
  got.push(m);
  if (m.id === 0) ws.send(JSON.stringify({jsonrpc: "2.0", id: 1, method: "x/wait", params: {}}));
  if (m.method === "x/entered") ws.close();
};
ws.onclose = e => {
  const el = document.getElementById("result");
  el.textContent = JSON.stringify({got, code: e.code});
  el.dataset.done = "1";
};
</script>`

// TestPageThatClosesItsWebSocketMidRequest has Chromium close its
// WebSocket while its request's handler waits for its context, the
// agent's InputEndGrace an hour: a browser drops what comes after its own
// close(), so the agent takes the close frame for the peer gone. Serve
// returns nil (a close without a status is a normal close) within a
// moment, the handler's context ending with ErrConnClosed. It used to wait
// the hour, and to return an error for the missing status.
func TestPageThatClosesItsWebSocketMidRequest(t *testing.T) {
	chromium := interoptest.RequireChromium(t)
	pages := httptest.NewServer(nil)
	defer pages.Close()
	causes, served := make(chan error, 1), make(chan error, 1)
	agent := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		if req.Method == "initialize" {
			return map[string]int{"protocolVersion": 1}, nil
		}
		if err := acprpc.ConnFromContext(ctx).Notify(ctx, "x/entered", nil); err != nil {
			return nil, err
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	})
	srv := remote.NewServer(func(tr acprpc.Transport, _ *http.Request) {
		go func() {
			served <- acprpc.Serve(context.Background(), tr, agent, &acprpc.Options{InputEndGrace: time.Hour})
		}()
	}, &remote.Options{AllowedOrigins: []string{pages.URL}})
	agents := httptest.NewServer(srv)
	defer agents.Close()
	defer func() { require.NoError(t, srv.Close()) }()
	servePage(pages, closingPage, "ws"+strings.TrimPrefix(agents.URL, "http")+remote.DefaultPath)

	got := runPage(t, chromium, pages.URL+"/")
	t.Logf("the page's record: %s", got)
	var out struct {
		Got  []map[string]any
		Code int
	}
	require.NoError(t, json.Unmarshal([]byte(got), &out))
	require.Len(t, out.Got, 2, "the answer to initialize, and x/entered")
	assert.Equal(t, "x/entered", out.Got[1]["method"])
	bound := time.After(wait)
	select {
	case cause := <-causes:
		assert.ErrorIs(t, cause, acprpc.ErrConnClosed)
	case <-bound:
		t.Fatal("the handler's context did not end")
	}
	select {
	case err := <-served:
		assert.NoError(t, err, "a close frame without a status is a normal close")
	case <-bound:
		t.Fatal("Serve did not return")
	}
}
