package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/remote"
)

// remoteTarget is an agent served at a URL rather than started by acpcheck:
// each connection to it is, as the remote transports have it, an agent of
// its own, so a fresh connection stands where a fresh process would.
type remoteTarget struct {
	URL       string // ws://, wss://, http:// or https://
	TokenFile string // a bearer token to send, read from this file
}

// registerRemote adds the flags of a remote agent to a run's flag set.
func (o *runOptions) registerRemote(fs *flag.FlagSet) {
	fs.StringVar(&o.Remote.URL, "url", "", "check the agent served at `URL` (ws://, wss:// for WebSocket; http://, https:// for Streamable HTTP) instead of starting a command")
	fs.StringVar(&o.Remote.TokenFile, "token-file", "", "with -url, send \"Authorization: Bearer TOKEN\", TOKEN being the content of `FILE`")
}

// isRemote reports whether the agent is reached at a URL.
func (o *runOptions) isRemote() bool { return o.Remote.URL != "" }

// validateTarget refuses a run with no agent, or with two.
func (o *runOptions) validateTarget() error {
	switch {
	case o.isRemote() && len(o.Argv) > 0:
		return errors.New("give -url or an agent command, not both")
	case !o.isRemote() && len(o.Argv) == 0:
		return errors.New("no agent command: give it after the flags, as in acpcheck run -- my-agent --stdio, or give -url")
	case !o.isRemote() && o.Remote.TokenFile != "":
		return errors.New("-token-file goes with -url")
	case o.isRemote():
		u, err := url.Parse(o.Remote.URL)
		if err != nil {
			return fmt.Errorf("-url: %w", err)
		}
		switch u.Scheme {
		case "ws", "wss", "http", "https":
		default:
			return fmt.Errorf("-url %q: the scheme must be ws, wss, http or https", o.Remote.URL)
		}
	}
	return nil
}

// isStreamableHTTP reports whether the remote agent is reached over
// Streamable HTTP, where each message is a POST of its own.
func (t remoteTarget) isStreamableHTTP() bool {
	u, err := url.Parse(t.URL) // which lowers the scheme's case, as Dial reads it
	return err == nil && (u.Scheme == "http" || u.Scheme == "https")
}

// dial connects to the remote agent and returns the transport a client
// Conn runs over. A refused or failed dial means the agent could not be
// run.
func (t remoteTarget) dial(ctx context.Context, timeout time.Duration) (acprpc.Transport, error) {
	opts := &remote.DialOptions{}
	if t.TokenFile != "" {
		b, err := os.ReadFile(t.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("%w: -token-file: %w", errNotRun, err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return nil, fmt.Errorf("%w: -token-file: %s holds no token", errNotRun, t.TokenFile)
		}
		opts.Header = http.Header{"Authorization": {"Bearer " + token}}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr, err := remote.Dial(ctx, t.URL, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot connect to %s: %w", errNotRun, t.URL, err)
	}
	return tr, nil
}

// The rules a remote agent cannot be checked against, and why.
const (
	whyRemoteProcess = "the agent is served at a URL: acpcheck has no process of it, whose stdin it could close"
	whyHTTPParse     = "over Streamable HTTP each message is a POST of a JSON object, and a body that is not JSON is refused by the transport, never read by the agent"
)

// canWriteNonJSON reports whether the transport carries a line that is not
// JSON to the agent, as stdio and WebSocket do.
func (r *runner) canWriteNonJSON() bool { return !r.o.isRemote() || !r.o.Remote.isStreamableHTTP() }

// target names the agent in the report: its command, or its URL.
func (o *runOptions) target() []string {
	if o.isRemote() {
		return []string{o.Remote.URL}
	}
	return o.Argv
}

// transportRefused reports whether err, initialize's error, was made by the
// Streamable HTTP client for a POST the server refused (a wrong path, a
// missing token): -32603 with the HTTP status in its data. Then no agent
// ever read the request.
func (r *runner) transportRefused(err error) bool {
	var rpcErr *acprpc.Error
	if !r.o.isRemote() || !r.o.Remote.isStreamableHTTP() || !errors.As(err, &rpcErr) || rpcErr.Code != acprpc.CodeInternalError {
		return false
	}
	var data struct {
		Status int `json:"status"`
	}
	return jsonInto(rpcErr.Data, &data) && data.Status >= 400
}
