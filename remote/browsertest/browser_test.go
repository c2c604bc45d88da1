package browsertest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/acpkit/acprpc/remote"
)

// wait bounds the whole page run.
const wait = 60 * time.Second

// page is what the browser runs: a client of the agent at AGENT, from
// another origin, over Streamable HTTP with the bearer token. Each step's
// outcome goes into #result, which the test reads once data-done is set; a
// request the browser blocks (a refused preflight, an answer the page may
// not read) ends the run with its error there.
const page = `<!doctype html>
<title>acprpc remote from a page</title>
<pre id="result"></pre>
<script>
const agent = AGENT, token = "s3cret", out = {};
const json = {"Content-Type": "application/json"};
const auth = {"Authorization": "Bearer " + token};
const initialize = JSON.stringify({jsonrpc: "2.0", id: 0, method: "initialize", params: {protocolVersion: 1}});
async function run() {
  out.step = "initialize without the token";
  out.withoutToken = (await fetch(agent, {method: "POST", headers: json, body: initialize})).status;
  out.step = "initialize";
  let r = await fetch(agent, {method: "POST", headers: {...json, ...auth}, body: initialize});
  out.initialize = r.status;
  const id = r.headers.get("Acp-Connection-Id");
  out.connectionID = id !== null && id !== "";
  out.initializeAnswer = await r.json();
  out.step = "the connection's stream";
  const stream = await fetch(agent, {headers: {"Accept": "text/event-stream", ...auth, "Acp-Connection-Id": id}});
  out.stream = stream.status;
  out.step = "session/new";
  r = await fetch(agent, {method: "POST", headers: {...json, ...auth, "Acp-Connection-Id": id},
    body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "session/new", params: {cwd: "/", mcpServers: []}})});
  out.sessionNew = r.status;
  out.step = "session/new's answer on the stream";
  const reader = stream.body.getReader(), decoder = new TextDecoder();
  for (let text = ""; !out.sessionNewAnswer;) {
    const {value, done} = await reader.read();
    if (done) throw new Error("the stream ended before the answer");
    text += decoder.decode(value, {stream: true});
    const m = text.match(/^data: (.*)$/m);
    if (m) out.sessionNewAnswer = JSON.parse(m[1]);
  }
  await reader.cancel();
  out.step = "DELETE";
  out.delete = (await fetch(agent, {method: "DELETE", headers: {...auth, "Acp-Connection-Id": id}})).status;
  out.step = "done";
}
run().catch(e => { out.error = String(e); }).finally(() => {
  const el = document.getElementById("result");
  el.textContent = JSON.stringify(out);
  el.dataset.done = "1";
});
</script>`

// TestPageOfAllowedOriginUsesAServerThatRequiresAToken serves an agent
// that requires a bearer token and lets one other origin's pages in, and
// has Chromium run a page of that origin through a whole connection:
// initialize without the token (the page reads the 401), with it, the
// connection's SSE stream, session/new and its answer on the stream, and
// DELETE. Every request but the first carries headers a browser asks
// about with a preflight first, without credentials.
func TestPageOfAllowedOriginUsesAServerThatRequiresAToken(t *testing.T) {
	chromium := interoptest.RequireChromium(t)

	pages := httptest.NewServer(nil) // its address is the page's origin; its handler is set below
	defer pages.Close()
	agent := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		switch req.Method {
		case "initialize":
			return map[string]int{"protocolVersion": 1}, nil
		case "session/new":
			return map[string]string{"sessionId": "s1"}, nil
		}
		return nil, acprpc.MethodNotFound(req.Method)
	})
	srv := remote.NewServer(remote.Handle(agent, nil), &remote.Options{
		AllowedOrigins: []string{pages.URL},
		Authenticate:   remote.BearerToken("s3cret"),
	})
	agents := httptest.NewServer(srv) // a Server is an http.Handler, serving any path
	defer agents.Close()
	defer func() { require.NoError(t, srv.Close()) }() // first: it ends the streams agents.Close waits for
	servePage(pages, page, agents.URL+remote.DefaultPath)

	got := runPage(t, chromium, pages.URL+"/")
	t.Logf("the page's record: %s", got)
	var out struct {
		Step, Error      string
		WithoutToken     int
		Initialize       int
		ConnectionID     bool
		InitializeAnswer map[string]any
		Stream           int
		SessionNew       int
		SessionNewAnswer map[string]any
		Delete           int
	}
	require.NoError(t, json.Unmarshal([]byte(got), &out))
	require.Empty(t, out.Error, "the page failed at %q", out.Step)
	assert.Equal(t, http.StatusUnauthorized, out.WithoutToken, "the page reads the refusal")
	assert.Equal(t, http.StatusOK, out.Initialize)
	assert.True(t, out.ConnectionID, "the page reads Acp-Connection-Id")
	assert.Equal(t, map[string]any{"jsonrpc": "2.0", "id": 0.0, "result": map[string]any{"protocolVersion": 1.0}}, out.InitializeAnswer)
	assert.Equal(t, http.StatusOK, out.Stream)
	assert.Equal(t, http.StatusAccepted, out.SessionNew)
	assert.Equal(t, map[string]any{"jsonrpc": "2.0", "id": 1.0, "result": map[string]any{"sessionId": "s1"}}, out.SessionNewAnswer)
	assert.Equal(t, http.StatusAccepted, out.Delete)
}

// servePage has pages serve html, its AGENT replaced by agentURL as a
// JavaScript string.
func servePage(pages *httptest.Server, html, agentURL string) {
	quoted, _ := json.Marshal(agentURL)
	pages.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(strings.Replace(html, "AGENT", string(quoted), 1)))
	})
}

// runPage opens url in a headless Chromium and returns #result's text once
// the page has marked it done.
func runPage(t *testing.T, chromium, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium's sandbox refuses to run as root
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	_, err := chromedp.Run(bctx, chromedp.Navigate(url))
	require.NoError(t, err)
	_, err = chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById("result").dataset.done === "1"`))
	require.NoError(t, err, "the page never finished")
	text, err := chromedp.Run(bctx, chromedp.Text("#result"))
	require.NoError(t, err)
	return text
}
