//go:build linux

package agents

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clientBound is how long a client through the proxy has for its whole
// conversation.
const clientBound = 2 * time.Minute

// proxied is examples/agent behind `acpcheck proxy -record`, as a client
// is given it for its agent's command.
type proxied struct {
	script string // the agent command: a script that execs the proxy
	record string // the proxy's record of the wire
	pid    string // a file the script writes the proxy's PID to
}

func newProxied(t *testing.T, acpcheckBin, agent string) proxied {
	dir := t.TempDir()
	p := proxied{script: filepath.Join(dir, "proxied-agent"), record: filepath.Join(dir, "wire.jsonl"), pid: filepath.Join(dir, "proxy.pid")}
	script := fmt.Sprintf("#!/bin/sh\necho $$ > '%s'\nexec '%s' proxy -record '%s' -- '%s' \"$@\"\n", p.pid, acpcheckBin, p.record, agent)
	require.NoError(t, os.WriteFile(p.script, []byte(script), 0o755))
	return p
}

// signal sends sig to the process whose PID the file holds (one this test
// started, through the client).
func signalPIDFile(t *testing.T, file string, sig syscall.Signal) {
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, sig))
}

// watched is a process's output, kept as it comes, with a wait for a
// string in it.
type watched struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	grown chan struct{} // closed and replaced on each write
	done  chan struct{} // closed when the output ends
}

func watch(r io.Reader) *watched {
	w := &watched{grown: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			w.mu.Lock()
			w.buf.Write(b[:n])
			close(w.grown)
			w.grown = make(chan struct{})
			w.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return w
}

// await waits, within clientBound, until the output holds s.
func (w *watched) await(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(clientBound)
	for {
		w.mu.Lock()
		found, grown := strings.Contains(w.buf.String(), s), w.grown
		w.mu.Unlock()
		if found {
			return
		}
		select {
		case <-grown:
		case <-w.done:
			t.Fatalf("the output ended without %q:\n%s", s, w.String())
		case <-deadline:
			t.Fatalf("no %q in the output within %v:\n%s", s, clientBound, w.String())
		}
	}
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// replayClient reads the proxy's record back with acpcheck report, and
// returns the report; its exit status must say whether a MUST failed.
func replayClient(t *testing.T, bin, record string) acpcheckReport {
	t.Helper()
	var stdout, stderr bytes.Buffer
	check := exec.Command(bin, "report", "-json", record)
	check.Stdout, check.Stderr = &stdout, &stderr
	err := check.Run()
	rep := parseReport(t, stdout.Bytes())
	if rep.mustFailed() {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "acpcheck report: %s", stderr.String())
		require.Equal(t, 1, exit.ExitCode())
	} else {
		require.NoError(t, err, "acpcheck report: %s", stderr.String())
	}
	return rep
}

// mustFailed reports whether a MUST of the report failed.
func (r acpcheckReport) mustFailed() bool {
	for _, res := range r.Results {
		if res.Tier == "MUST" && res.Status == "fail" {
			return true
		}
	}
	return false
}

// expectOwedAtQuit checks the client rules of a client that sent
// session/cancel and quit without answering the requests it owed: when it
// closed its side after reading the turn's answer, each one it owed is a
// finding of client-cancel-answered (the agent cancelled it) or
// client-permission-cancelled; when before, they were cut short, which the
// report says. Which of the two the wire shows is the client's timing.
func expectOwedAtQuit(t *testing.T, rep acpcheckReport) {
	t.Helper()
	for _, id := range []string{"client-permission-cancelled", "client-cancel-answered"} {
		status := rep.statuses()[id]
		switch status {
		case "fail":
			for _, f := range rep.findings(t, id) {
				assert.Contains(t, f.Detail, "was never answered", id)
			}
		case notBrought:
			why := rep.why(id)
			assert.True(t, strings.Contains(why, "cut short") || strings.Contains(why, "judges it") || strings.Contains(why, "cancelled no"), "%s: %s", id, why)
		default:
			t.Errorf("%s: %s, where the client answered none of the requests it owed", id, status)
		}
	}
	assert.Zero(t, rep.clientAnswersAfterCancel(), "the client answered nothing after its session/cancel")
}

// expectWatched checks the status of every rule of the replay: the client
// rules as want says, all others passed.
func expectWatched(t *testing.T, rep acpcheckReport, want map[string]string) {
	t.Helper()
	for _, res := range rep.Results {
		if want[res.ID] != owedAtQuit {
			assert.Equal(t, cmp.Or(want[res.ID], "pass"), res.Status, "%s: %s %v", res.ID, res.Why, res.Findings)
		}
	}
}

// owedAtQuit, for a client rule in expectWatched's want, is judged by
// expectOwedAtQuit.
const owedAtQuit = "owed at quit"

// clientAnswersAfterCancel counts the client's answers after its first
// session/cancel.
func (r acpcheckReport) clientAnswersAfterCancel() int {
	n, cancelled := 0, false
	for _, l := range r.Wire {
		var msg struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if l.Dir != "to_agent" || json.Unmarshal([]byte(l.Raw), &msg) != nil {
			continue
		}
		cancelled = cancelled || msg.Method == "session/cancel"
		if cancelled && msg.Method == "" && msg.ID != nil {
			n++
		}
	}
	return n
}

// why is the reason the report gives for a rule's status.
func (r acpcheckReport) why(id string) string {
	for _, res := range r.Results {
		if res.ID == id {
			return res.Why
		}
	}
	return ""
}

// wireMethods lists the methods of the record's lines going dir, in order.
func (r acpcheckReport) wireMethods(dir string) []string {
	var out []string
	for _, l := range r.Wire {
		var msg struct {
			Method string `json:"method"`
		}
		if l.Dir == dir && json.Unmarshal([]byte(l.Raw), &msg) == nil && msg.Method != "" {
			out = append(out, msg.Method)
		}
	}
	return out
}

// clientAnswers counts the answers the client sent, to the agent's requests.
func (r acpcheckReport) clientAnswers() int {
	n := 0
	for _, l := range r.Wire {
		var msg struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if l.Dir == "to_agent" && json.Unmarshal([]byte(l.Raw), &msg) == nil && msg.Method == "" && msg.ID != nil {
			n++
		}
	}
	return n
}

// notBrought is the status of a rule the conversation gave no chance to be
// broken.
const notBrought = "not-brought-about"

// coder/acp-go-sdk's example client (example/client), at the version
// testdata/coderagent pins, through acpcheck proxy in front of
// examples/agent. It prompts once and cannot cancel: it has no
// session/cancel, no $/cancel_request, and SIGINT kills it. Answering its
// permission prompt (stdin), it breaks nothing and the client rules are not
// brought about.
func TestProxyJudgesCoderExampleClient(t *testing.T) {
	client := buildCoderExample(t, "client")
	acpcheckBin := buildAcpcheck(t)
	agent := buildCommand(t, "github.com/acpkit/acprpc/examples/agent")
	for _, c := range []struct {
		name       string
		drive      func(t *testing.T, p proxied, stdin io.Writer)
		want       map[string]string
		stopReason string
	}{
		{"permission answered", func(t *testing.T, _ proxied, stdin io.Writer) {
			_, err := io.WriteString(stdin, "1\n")
			require.NoError(t, err)
		}, map[string]string{"cancel-stop-reason": notBrought, "cancel-request": notBrought, "error-message": notBrought,
			"client-permission-cancelled": notBrought, "client-cancel-answered": notBrought}, "end_turn"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProxied(t, acpcheckBin, agent)
			ctx, cancel := context.WithTimeout(context.Background(), clientBound)
			defer cancel()
			run := exec.CommandContext(ctx, client, p.script)
			run.Dir, run.Env = t.TempDir(), scratchEnv(t)
			stdin, err := run.StdinPipe()
			require.NoError(t, err)
			stdout, err := run.StdoutPipe()
			require.NoError(t, err)
			var stderr bytes.Buffer
			run.Stderr = &stderr
			require.NoError(t, run.Start())
			out := watch(stdout)
			out.await(t, "Permission requested")
			c.drive(t, p, stdin)
			<-out.done
			require.NoError(t, run.Wait(), "%s\n%s", out.String(), stderr.String())
			assert.Contains(t, out.String(), "Agent completed")

			rep := replayClient(t, acpcheckBin, p.record)
			expectWatched(t, rep, c.want)
			assert.NotContains(t, rep.wireMethods("to_agent"), "session/cancel", "the example client never cancels")
			last := rep.Wire[len(rep.Wire)-1]
			assert.Contains(t, last.Raw, `"stopReason":"`+c.stopReason+`"`, "the prompt's answer is the wire's last line")
		})
	}
}

// acpx 0.1.15 (the newest acpx that runs on Node.js 20), `acpx --agent
// <proxied examples/agent> exec PROMPT`, pinned in package.json here.
// Approving every permission (--approve-all), it breaks nothing: a turn to
// its end, and one cancelled with SIGINT, which acpx turns into
// session/cancel (nothing of the agent's is pending then: the client rules
// are not brought about). At a terminal, asking the user (a pseudo-terminal
// from script(1)), SIGINT while the permission prompt is open sends
// session/cancel with the permission request and terminal/create pending;
// the agent cancels both with $/cancel_request and answers the prompt
// cancelled; acpx answers neither request, not with the cancelled outcome
// either, and quits (or stays at its next question, and is ended). Closing
// its side after the turn's answer, it owed both answers and fails
// client-cancel-answered for each; closing it before, it cut them short:
// which, is acpx's timing (expectOwedAtQuit).
func TestProxyJudgesAcpx(t *testing.T) {
	acpcheckBin := buildAcpcheck(t)
	agent := buildCommand(t, "github.com/acpkit/acprpc/examples/agent")
	for _, c := range []struct {
		name      string
		prompt    string
		tty       bool
		interrupt string // SIGINT acpx once its output holds this ("" for never)
		want      map[string]string
		cancelled bool
	}{
		{"turn to its end", "hello", false, "", map[string]string{"cancel-stop-reason": notBrought, "cancel-request": notBrought, "error-message": notBrought,
			"client-permission-cancelled": notBrought, "client-cancel-answered": notBrought}, false},
		{"interrupted", "slow", false, "Permission granted", map[string]string{"cancel-request": notBrought, "error-message": notBrought,
			"client-permission-cancelled": notBrought, "client-cancel-answered": notBrought}, true},
		{"interrupted at its permission prompt", "slow", true, "[permission] Allow Run", map[string]string{"cancel-request": notBrought, "error-message": notBrought,
			"client-permission-cancelled": owedAtQuit, "client-cancel-answered": owedAtQuit}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProxied(t, acpcheckBin, agent)
			acpx := startAcpx(t, p.script, c.prompt, c.tty)
			if c.interrupt != "" {
				acpx.interrupt(t, c.interrupt)
			}
			if c.cancelled {
				acpx.quitAfterCancel(t)
			} else {
				acpx.wait(t)
			}

			rep := replayClient(t, acpcheckBin, p.record)
			expectWatched(t, rep, c.want)
			last := rep.Wire[len(rep.Wire)-1]
			if !c.cancelled {
				assert.Contains(t, last.Raw, `"stopReason":"end_turn"`)
				return
			}
			assert.Contains(t, rep.wireMethods("to_agent"), "session/cancel", "acpx turns SIGINT into session/cancel")
			assert.Contains(t, last.Raw, `"stopReason":"cancelled"`, "the prompt's answer is the wire's last line")
			if !c.tty {
				assert.NotContains(t, rep.wireMethods("from_agent"), "$/cancel_request", "nothing of the agent's was pending at the cancel")
				return
			}
			// The agent asks for both at once: their order is its goroutines'.
			assert.ElementsMatch(t, []string{"session/update", "terminal/create", "session/request_permission", "$/cancel_request", "$/cancel_request", "session/update"},
				rep.wireMethods("from_agent"), "both requests pending at the cancel, each cancelled by the agent")
			assert.Zero(t, rep.clientAnswers(), "acpx answered neither the permission request nor terminal/create")
			expectOwedAtQuit(t, rep)
		})
	}
}

// acpxRun is acpx 0.1.15 (`acpx --agent AGENT exec PROMPT`) running as a
// user runs it.
type acpxRun struct {
	cmd     *exec.Cmd
	out     *watched
	pidFile string // acpx's PID
}

// startAcpx starts acpx with agent as its agent's command. With tty, it
// runs at a pseudo-terminal from script(1) and asks the user for each
// permission; without, it approves every permission (--approve-all).
func startAcpx(t *testing.T, agent, prompt string, tty bool) *acpxRun {
	t.Helper()
	node := requireAgents(t)
	cli := filepath.Join(packagesDir, "node_modules", "acpx", "dist", "cli.js")
	a := &acpxRun{pidFile: filepath.Join(t.TempDir(), "acpx.pid")}
	args := []string{"--format", "json", "--agent", agent, "exec", prompt}
	if !tty {
		args = append([]string{"--approve-all"}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clientBound)
	t.Cleanup(cancel)
	if tty {
		script, err := exec.LookPath("script")
		require.NoError(t, err, "the acpx test needs script(1) (Debian's bsdutils) for a pseudo-terminal")
		line := fmt.Sprintf("echo $$ > '%s'; exec '%s' '%s' %s", a.pidFile, node, cli, strings.Join(quoteAll(args), " "))
		a.cmd = exec.CommandContext(ctx, script, "-qfec", line, "/dev/null")
	} else {
		a.cmd = exec.CommandContext(ctx, "/bin/sh", "-c", fmt.Sprintf("echo $$ > '%s'; exec \"$@\"", a.pidFile), "sh", node, cli)
		a.cmd.Args = append(a.cmd.Args, args...)
	}
	a.cmd.Dir, a.cmd.Env = t.TempDir(), append(scratchEnv(t), "SHELL=/bin/sh", "TERM=dumb")
	stdout, err := a.cmd.StdoutPipe()
	require.NoError(t, err)
	a.cmd.Stderr = a.cmd.Stdout
	require.NoError(t, a.cmd.Start())
	a.out = watch(stdout)
	return a
}

// interrupt sends acpx SIGINT once its output holds s.
func (a *acpxRun) interrupt(t *testing.T, s string) {
	t.Helper()
	a.out.await(t, s)
	signalPIDFile(t, a.pidFile, syscall.SIGINT)
}

// wait waits for acpx to exit, and logs its output.
func (a *acpxRun) wait(t *testing.T) {
	<-a.out.done
	err := a.cmd.Wait()
	t.Logf("acpx: %v\n%s", err, a.out.String())
}

// acpxQuitBound is how long acpx has to exit by itself once its cancelled
// prompt is answered.
const acpxQuitBound = 10 * time.Second

// quitAfterCancel waits for acpx's cancelled prompt to be answered, then
// for acpx to exit, and ends it with SIGKILL when it has not within
// acpxQuitBound: at a terminal, acpx 0.1.15 may stay at its next
// permission question after the turn was answered cancelled, as its user
// would see (which question it reached is a race of its own). Either way
// it has read the turn's answer and ends the conversation owing what it
// owes.
func (a *acpxRun) quitAfterCancel(t *testing.T) {
	t.Helper()
	a.out.await(t, `"stopReason":"cancelled"`)
	select {
	case <-a.out.done:
	case <-time.After(acpxQuitBound):
		t.Logf("acpx had not exited %v after its cancelled prompt was answered: SIGKILL", acpxQuitBound)
		signalPIDFile(t, a.pidFile, syscall.SIGKILL)
	}
	a.wait(t)
}

// quoteAll quotes each argument for sh.
func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}
