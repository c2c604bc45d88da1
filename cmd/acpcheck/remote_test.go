package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/acpkit/acprpc/remote"
)

// listenEnv makes the test agent serve over WebSocket and Streamable HTTP
// instead of stdio, each connection an agent of its own, with the faults
// agentEnv names.
const listenEnv = "ACPCHECK_TEST_LISTEN"

// listenRaw serves the raw agent remotely on a loopback port it prints as
// its first line, until its stdin ends.
func listenRaw(faults map[string]bool) {
	srv := remote.NewServer(func(t acprpc.Transport, _ *http.Request) {
		go serveRawOver(t, faults)
	}, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("http://" + l.Addr().String() + remote.DefaultPath)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	_ = srv.Serve(l)
}

// serveRawOver runs a raw agent over one remote connection: its messages
// become the lines the agent reads, the lines it writes messages.
func serveRawOver(t acprpc.Transport, faults map[string]bool) {
	in, feed := io.Pipe()
	go func() {
		for {
			msg, err := t.Recv()
			if err != nil {
				feed.CloseWithError(err)
				return
			}
			if _, err := feed.Write(append(msg, '\n')); err != nil {
				return
			}
		}
	}()
	newRawAgent(&lineSender{t: t}, faults).serve(in)
	in.Close()
	t.Close()
}

// lineSender sends each whole line written to it as one message.
type lineSender struct {
	t       acprpc.Transport
	partial []byte
}

func (s *lineSender) Write(b []byte) (int, error) {
	s.partial = append(s.partial, b...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		if err := s.t.Send(s.partial[:i]); err != nil {
			return 0, err
		}
		s.partial = s.partial[i+1:]
	}
}

// listening is an agent process serving remotely.
type listening struct {
	url string // http://ADDR/acp
}

// ws is the agent's WebSocket URL.
func (l listening) ws() string { return "ws" + strings.TrimPrefix(l.url, "http") }

// listen starts argv, which serves an agent remotely and prints its
// http://…/acp URL first; the test's end closes its stdin and sends it
// SIGTERM, and waits for it.
func listen(t *testing.T, argv, env []string) listening {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stderr interoptest.SyncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "%s did not print its URL; stderr:\n%s", argv[0], stderr.String())
	return listening{url: strings.TrimSpace(line)}
}

// listenTestAgent serves the test agent with faults remotely.
func listenTestAgent(t *testing.T, faults ...string) listening {
	o := testOptions(t, faults...)
	return listen(t, o.Argv, append(o.Env, listenEnv+"=1"))
}

// remoteOptions checks the agent at url with testOptions' bounds.
func remoteOptions(t *testing.T, url string) runOptions {
	o := testOptions(t)
	o.Argv, o.Env, o.Remote = nil, nil, remoteTarget{URL: url}
	return o
}

// The transports a remote agent is checked over.
var transports = []string{"ws", "http"}

func (l listening) urlOf(transport string) string {
	if transport == "ws" {
		return l.ws()
	}
	return l.url
}

// expectRemoteResults checks that every rule passed but those a remote
// agent cannot be checked against, which are not brought about, and says
// why.
func expectRemoteResults(t *testing.T, rep *Report, transport string) {
	t.Helper()
	notBrought := map[string]string{ruleStdinExit.ID: whyRemoteProcess, ruleNoLeftover.ID: whyRemoteProcess, ruleOwnRequests.ID: whyNoOpenRequest}
	if transport == "http" {
		notBrought[ruleParseError.ID] = whyHTTPParse
	}
	for _, r := range rep.Results {
		if why, ok := notBrought[r.ID]; ok {
			assert.Equal(t, NotBrought, r.Status, r.ID)
			assert.Equal(t, why, r.Why, r.ID)
			continue
		}
		assert.Equal(t, Pass, r.Status, "%s: %+v", r.ID, r)
	}
	assert.Equal(t, 0, rep.ExitCode())
	assert.NotEmpty(t, rep.WireV2, "checked in v2 too, on a connection of its own")
}

// examples/agent, served over WebSocket and Streamable HTTP, passes every
// rule a remote agent can be checked against, in v1 and in v2.
func TestExampleAgentServedRemotelyPasses(t *testing.T) {
	srv := listen(t, []string{buildExampleAgent(t), "-listen", "127.0.0.1:0"}, nil)
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			url := srv.urlOf(transport)
			rep, err := runChecks(context.Background(), remoteOptions(t, url))
			require.NoError(t, err)
			assert.Equal(t, []string{url}, rep.Agent)
			expectRemoteResults(t, rep, transport)
		})
	}
}

// The test agent served remotely: correct, it passes; with each fault a
// remote connection can show, its check catches it, over both transports.
func TestBrokenRemoteAgentIsCaught(t *testing.T) {
	t.Run("correct", func(t *testing.T) {
		srv := listenTestAgent(t)
		for _, transport := range transports {
			t.Run(transport, func(t *testing.T) {
				t.Parallel()
				rep, err := runChecks(context.Background(), remoteOptions(t, srv.urlOf(transport)))
				require.NoError(t, err)
				expectRemoteResults(t, rep, transport)
			})
		}
	})
	for _, c := range brokenRules {
		if c.process {
			continue
		}
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			srv := listenTestAgent(t, c.fault)
			for _, transport := range transports {
				if transport == "http" && c.nonJSON {
					continue
				}
				t.Run(transport, func(t *testing.T) {
					t.Parallel()
					o := remoteOptions(t, srv.urlOf(transport))
					o.OfferTerminal = c.terminal
					rep, err := runChecks(context.Background(), o)
					require.NoError(t, err)
					assert.ElementsMatch(t, c.fails, failed(t, rep))
					assert.Equal(t, exitFor(c.fails), rep.ExitCode())
				})
			}
		})
	}
}

// A remote agent that cannot be reached, or refuses acpcheck, could not be
// run: exit status 2, saying why. With its token it is checked.
func TestUnreachableRemoteAgentExits2(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("s3cret\n"), 0o600))
	srv := listen(t, []string{buildExampleAgent(t), "-listen", "127.0.0.1:0", "-token-file", token}, nil)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	nobody := closed.Addr().String()
	require.NoError(t, closed.Close())
	for name, c := range map[string]struct {
		args []string
		says string
	}{
		"ws, nobody listens":   {[]string{"-url", "ws://" + nobody + "/acp"}, "cannot connect"},
		"http, nobody listens": {[]string{"-url", "http://" + nobody + "/acp"}, "before initialize was answered"},
		"ws, no token":         {[]string{"-url", srv.ws()}, "401"},
		"http, no token":       {[]string{"-url", srv.url}, "401"},
		"http, wrong path":     {[]string{"-url", strings.TrimSuffix(srv.url, "/acp") + "/elsewhere", "-token-file", token}, "404"},
		"ws, empty token":      {[]string{"-url", srv.ws(), "-token-file", os.DevNull}, "holds no token"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, mainCode(context.Background(), append([]string{"run", "-timeout", "5s"}, c.args...), &stdout, &stderr))
			assert.Contains(t, stderr.String(), c.says)
			assert.Empty(t, stdout.String())
		})
	}
	t.Run("with the token", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := mainCode(context.Background(), []string{"run", "-json", "-settle", "100ms", "-url", srv.url, "-token-file", token}, &stdout, &stderr)
		assert.Equal(t, 0, code, "%s\n%s", stdout.String(), stderr.String())
	})
}

func TestRemoteCommandLines(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "-url", "ws://127.0.0.1:1/acp", "--", "agent"}, "not both"},
		{[]string{"run", "-url", "ftp://127.0.0.1/acp"}, "scheme"},
		{[]string{"run", "-token-file", "x", "--", "agent"}, "goes with -url"},
		{[]string{"run"}, "no agent command"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, mainCode(context.Background(), c.args, &stdout, &stderr), "%q", c.args)
		assert.Contains(t, stderr.String(), c.says, "%q", c.args)
	}
}

// The transport is told by the URL's scheme in any case, as Dial reads it:
// over Streamable HTTP no line that is not JSON is written.
func TestStreamableHTTPIsToldByTheScheme(t *testing.T) {
	for url, http := range map[string]bool{
		"http://127.0.0.1/acp": true, "HTTPS://127.0.0.1/acp": true, "Http://h/acp": true,
		"ws://127.0.0.1/acp": false, "WSS://127.0.0.1/acp": false,
	} {
		assert.Equal(t, http, remoteTarget{URL: url}.isStreamableHTTP(), url)
	}
}
