//go:build linux

package agents

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkingAgent is `acpcheck agent` as a client is given it for its
// agent's command.
type checkingAgent struct {
	script string // the agent command
	report string // acpcheck agent's JSON report
	ended  chan struct{}
}

// newCheckingAgent writes a script that runs acpcheck agent with a JSON
// report. The script holds a FIFO's write end open as acpcheck's fd 3, so
// that the FIFO's reader sees its end when acpcheck has exited, however it
// ends: a client may exit first, and acpx kills its agent's script.
func newCheckingAgent(t *testing.T, acpcheckBin string, args ...string) *checkingAgent {
	t.Helper()
	dir := t.TempDir()
	a := &checkingAgent{script: filepath.Join(dir, "acpcheck-agent"), report: filepath.Join(dir, "report.json"), ended: make(chan struct{})}
	fifo := filepath.Join(dir, "ended")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	script := fmt.Sprintf("#!/bin/sh\nexec '%s' agent -json '%s' %s 3>'%s'\n", acpcheckBin, a.report, joinQuoted(args), fifo)
	require.NoError(t, os.WriteFile(a.script, []byte(script), 0o755))
	go func() {
		defer close(a.ended)
		f, err := os.Open(fifo) // blocks until the script opens its write end
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = io.Copy(io.Discard, f) // ends once every writer has exited
	}()
	t.Cleanup(func() {
		// Release the reader if the script never ran.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-a.ended
	})
	return a
}

// result waits, within clientBound, for acpcheck agent to exit, and
// returns its report.
func (a *checkingAgent) result(t *testing.T) acpcheckReport {
	t.Helper()
	select {
	case <-a.ended:
	case <-time.After(clientBound):
		t.Fatalf("acpcheck agent did not exit within %v", clientBound)
	}
	b, err := os.ReadFile(a.report)
	require.NoError(t, err, "acpcheck agent wrote no report")
	return parseReport(t, b)
}

func joinQuoted(args []string) string {
	s := ""
	for _, q := range quoteAll(args) {
		s += " " + q
	}
	return s
}

// coder/acp-go-sdk's example client with acpcheck agent as its agent:
// it answers the permission request (the user types 1), serves the
// terminal and the file read, and never cancels, so the turn ends end_turn
// after -cancel-within and the cancellation rules are not brought about;
// it breaks no rule. It kills its agent as soon as the turn is answered:
// the report is the one acpcheck wrote as the turn ended.
func TestAgentModeJudgesCoderExampleClient(t *testing.T) {
	client := buildCoderExample(t, "client")
	agent := newCheckingAgent(t, buildAcpcheck(t), "-cancel-within", "3s", "-cancel-wait", "2s")
	ctx, cancel := context.WithTimeout(context.Background(), clientBound)
	defer cancel()
	run := exec.CommandContext(ctx, client, agent.script)
	run.Dir, run.Env = t.TempDir(), scratchEnv(t)
	stdin, err := run.StdinPipe()
	require.NoError(t, err)
	stdout, err := run.StdoutPipe()
	require.NoError(t, err)
	run.Stderr = run.Stdout
	require.NoError(t, run.Start())
	out := watch(stdout)
	out.await(t, "Choose an option")
	_, err = io.WriteString(stdin, "1\n")
	require.NoError(t, err)
	<-out.done
	require.NoError(t, run.Wait(), "%s", out.String())
	assert.Contains(t, out.String(), "acpcheck: the turn ended: not cancelled.")

	rep := agent.result(t)
	expectWatched(t, rep, map[string]string{"error-message": notBrought,
		"client-permission-cancelled": notBrought, "client-cancel-answered": notBrought})
	assert.Contains(t, rep.why("client-cancel-answered"), "acpcheck cancelled no request of its own")
	assert.Contains(t, rep.Ended, "as of the end of turn 1", "the client killed acpcheck before it saw the conversation's end")
}

// acpx 0.1.15 with acpcheck agent as its agent. Approving every permission,
// SIGINT while acpcheck's terminal/wait_for_exit is open: acpx sends
// session/cancel, answers the wait acpcheck then cancels with
// $/cancel_request, and passes. At a terminal, SIGINT while its permission
// prompt is open: acpx sends session/cancel and quits, answering neither
// the permission request, which a v1 client answers cancelled after its
// session/cancel, nor the terminal/create acpcheck cancelled: both MUSTs
// fail when it closed its side after the turn's answer, and are cut short
// when before (expectOwedAtQuit).
func TestAgentModeJudgesAcpx(t *testing.T) {
	acpcheckBin := buildAcpcheck(t)
	for _, c := range []struct {
		name      string
		tty       bool
		interrupt string
		want      map[string]string
	}{
		{"interrupted while its terminal runs", false, "terminal/wait_for_exit",
			map[string]string{"client-permission-cancelled": notBrought}},
		{"interrupted at its permission prompt", true, "[permission]",
			map[string]string{"client-permission-cancelled": owedAtQuit, "client-cancel-answered": owedAtQuit}},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent := newCheckingAgent(t, acpcheckBin, "-cancel-within", "60s", "-cancel-wait", "5s")
			acpx := startAcpx(t, agent.script, "hello", c.tty)
			acpx.interrupt(t, c.interrupt)
			acpx.quitAfterCancel(t)

			rep := agent.result(t)
			expectWatched(t, rep, c.want)
			assert.Contains(t, rep.wireMethods("to_agent"), "session/cancel", "acpx turns SIGINT into session/cancel")
			last := rep.Wire[len(rep.Wire)-1]
			assert.Contains(t, last.Raw, `"stopReason":"cancelled"`, "the prompt's answer is the wire's last line")
			if c.tty {
				expectOwedAtQuit(t, rep)
			}
		})
	}
}
