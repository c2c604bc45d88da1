//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// processBound is how long a test gives acpcheck to end once it should:
// its own bounds (stopBounds, outputIdle) and a loaded machine's slowness.
const processBound = 30 * time.Second

// runFlags are run's bounds for the tests that run acpcheck as a process.
var runFlags = []string{"run", "-json", "-timeout", "10s", "-cancel-after", "5s", "-cancel-wait", "3s", "-exit-wait", "3s",
	"-settle", "100ms", "-slow-prompt", "Count slowly."}

// A signal to the proxy ends an agent that ignores SIGTERM and its stdin's
// end: the proxy escalates to SIGKILL within its bounds, exits, and leaves
// no agent behind.
func TestProxyEndsOnSignalWhenAgentIgnoresSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			p := startAcpcheck(t, "correct,"+faultIgnoreTerm+","+faultIgnoreEOF, "proxy", "--", osArgs0())
			out := readLines(p.stdout)
			p.initialize(t)
			awaitLine(t, out, `"protocolVersion":1`, processBound)
			require.NoError(t, p.cmd.Process.Signal(sig))
			p.awaitExit(t, processBound)
			p.requireGone(t)
		})
	}
}

// run ends an agent that left the process group acpcheck made for it and
// ignores SIGTERM and its stdin's end: it signals the agent itself too,
// bounds every wait, prints the report and exits.
func TestRunEndsAgentThatLeftItsGroup(t *testing.T) {
	p := startAcpcheck(t, strings.Join([]string{"correct", faultOwnGroup, faultIgnoreTerm, faultIgnoreEOF}, ","), append(runFlags, "--", osArgs0())...)
	report := make(chan []byte, 1)
	go func() { b, _ := readAll(p.stdout); report <- b }()
	state := p.awaitExit(t, 2*processBound)
	assert.Equal(t, 0, state.ExitCode(), "stdin-exit, the one rule it breaks, is recorded only")
	var rep Report
	require.NoError(t, json.Unmarshal(<-report, &rep))
	assert.Equal(t, Fail, rep.result(ruleStdinExit.ID).Status)
	p.requireGone(t)
}

// The proxy survives an editor that closes its end of the proxy's stdout
// mid-turn: the agent's next write fails with EPIPE instead of killing the
// proxy with SIGPIPE, the proxy ends the agent, prints how the
// conversation ended, and its record is whole lines that report reads.
func TestProxyKeepsRecordWhenEditorQuits(t *testing.T) {
	record := filepath.Join(t.TempDir(), "wire.jsonl")
	p := startAcpcheck(t, agentTicker, "proxy", "-record", record, "--", osArgs0())
	errs := readLines(p.stderr)
	p.initialize(t)
	awaitLine(t, readLines(p.stdout), "tick", processBound)
	require.NoError(t, p.stdout.Close()) // the editor quits, its stdin left open
	state := p.awaitExit(t, processBound)
	status := state.Sys().(syscall.WaitStatus)
	require.False(t, status.Signaled(), "the proxy died of %v", status.Signal())
	awaitLine(t, errs, "the conversation ended", processBound)
	rec, err := readRecordingFile(record)
	require.NoError(t, err)
	assert.Zero(t, rec.cut, "the record was cut mid-line")
	assert.Equal(t, toAgent, rec.lines[0].Dir)
	assert.True(t, rec.end.ByEditor, "%+v", rec.end)
	p.requireGone(t)
}

// The proxy goes on forwarding both ways while its stderr is full: an
// editor that never reads it still gets every answer, and the findings that
// did not fit are counted, not waited for.
func TestProxyForwardsWhileStderrIsFull(t *testing.T) {
	p := startAcpcheck(t, "correct,"+faultAnswerNote, "proxy", "--", osArgs0())
	out := readLines(p.stdout)
	// Each cancel of an unknown ID is answered, each answer a finding: far
	// more than a pipe holds.
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	for i := range 3000 {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}`+"\n", 100000+i)
	}
	in.WriteString(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}` + "\n")
	written := make(chan error, 1)
	go func() { _, err := p.stdin.WriteString(in.String()); written <- err }()
	awaitLine(t, out, `"sessionId":"s1"`, processBound)
	select {
	case err := <-written:
		require.NoError(t, err)
	case <-time.After(processBound):
		require.Fail(t, "the editor's lines were answered, yet not all taken")
	}
	// The proxy judges a line after forwarding it, and may hold it behind
	// the other way's lines: a session asked for only now is answered once
	// every line before it was judged, so that every finding was reported,
	// and the most of them dropped, before stderr is read.
	_, err := p.stdin.WriteString(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}` + "\n")
	require.NoError(t, err)
	awaitLine(t, out, `"sessionId":"s2"`, processBound)
	errs := readLines(p.stderr) // late: the proxy says what it dropped
	awaitLine(t, errs, "findings were not written", processBound)
	ended := make(chan string, 1) // read on, as the editor now does
	go func() {
		defer close(ended)
		for l := range errs {
			if strings.Contains(l, "the conversation ended") {
				ended <- l
			}
		}
	}()
	require.NoError(t, p.stdin.Close())
	p.awaitExit(t, processBound)
	assert.Contains(t, <-ended, "of them not written: stderr was full")
}

// no-leftover finds a daemon the agent started, double-forked into a
// session of its own, and acpcheck kills it.
func TestNoLeftoverFindsDaemon(t *testing.T) {
	p := startAcpcheck(t, "correct,"+faultDaemon, append(runFlags, "--", osArgs0())...)
	report := make(chan []byte, 1)
	go func() { b, _ := readAll(p.stdout); report <- b }()
	p.awaitExit(t, 2*processBound)
	var rep Report
	require.NoError(t, json.Unmarshal(<-report, &rep))
	res := rep.result(ruleNoLeftover.ID)
	require.Equal(t, Fail, res.Status, "%+v %+v", res, rep.result(ruleStdinExit.ID))
	p.requireGone(t)
}

// A proxy killed mid-conversation leaves a record of whole lines: each is
// written whole as it goes, none held in a buffer for the exit.
func TestProxyRecordSurvivesKill(t *testing.T) {
	record := filepath.Join(t.TempDir(), "wire.jsonl")
	p := startAcpcheck(t, agentTicker, "proxy", "-record", record, "--", osArgs0())
	p.initialize(t)
	out := readLines(p.stdout)
	awaitLine(t, out, `"tick 200"`, processBound)
	signalGroup(p.cmd, true) // the proxy and its agent, as a shell's group would be
	p.awaitExit(t, processBound)
	rec, err := readRecordingFile(record)
	require.NoError(t, err)
	assert.Zero(t, rec.cut, "the record ends in a whole line")
	assert.Greater(t, len(rec.lines), 100, "the lines forwarded before the kill are recorded")
	assert.Empty(t, rec.end.Why, "a killed proxy writes no end")
}

// The proxy ends hostile agents when the editor closes its stdin or signals
// it, within the stop's bounds, leaving nothing behind: one that ignores its
// stdin's end and SIGTERM, one that left its group too, one that leaves a
// daemon.
func TestProxyEndsHostileAgents(t *testing.T) {
	for _, c := range []struct {
		name   string
		faults []string
		end    func(p *acpcheckProc) error
	}{
		{"ignores stdin's end and SIGTERM", []string{faultIgnoreEOF, faultIgnoreTerm}, func(p *acpcheckProc) error { return p.stdin.Close() }},
		{"left its group", []string{faultOwnGroup, faultIgnoreEOF, faultIgnoreTerm}, func(p *acpcheckProc) error { return p.cmd.Process.Signal(syscall.SIGTERM) }},
		{"left its group, stdin closed", []string{faultOwnGroup, faultIgnoreEOF, faultIgnoreTerm}, func(p *acpcheckProc) error { return p.stdin.Close() }},
		{"daemonised a child", []string{faultDaemon}, func(p *acpcheckProc) error { return p.stdin.Close() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := startAcpcheck(t, strings.Join(append([]string{"correct"}, c.faults...), ","), "proxy", "--", osArgs0())
			out := readLines(p.stdout)
			p.initialize(t)
			awaitLine(t, out, `"protocolVersion":1`, processBound)
			require.NoError(t, c.end(p))
			p.awaitExit(t, processBound)
			p.requireGone(t)
		})
	}
}

// An editor that stops reading the proxy's stdout, then closes its stdin:
// the proxy's write to it stays blocked, and the proxy still ends the agent
// and exits within its bounds (the stop's, drainBound, outputIdle).
func TestProxyEndsWhenEditorStopsReading(t *testing.T) {
	p := startAcpcheck(t, agentCat, "proxy", "--", osArgs0())
	_, err := p.stdin.WriteString(strings.Repeat(`{"jsonrpc":"2.0","method":"_x/note","params":{}}`+"\n", 4000)) // echoed: more than a pipe holds
	require.NoError(t, err)
	require.NoError(t, p.stdin.Close()) // the agent floods after its input's end
	p.awaitExit(t, 2*processBound)
}
