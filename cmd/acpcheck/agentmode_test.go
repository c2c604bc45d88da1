//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The faults a scripted client of acpcheck agent can be given, each
// breaking one client rule, and the ways it can behave otherwise.
const (
	clientGrantsAfterCancel = "grant-after-cancel"  // answers the pending permission "selected" after its own session/cancel
	clientOtherError        = "other-error"         // answers a request acpcheck cancelled -32603
	clientAnswersTwice      = "answer-twice"        // answers a request acpcheck cancelled twice
	clientAnswersNote       = "answer-notification" // answers a session/update
	clientUnknownID         = "unknown-id"          // answers an ID acpcheck never sent
	clientLogLine           = "log-line"            // writes a line that is not JSON
	clientSilentPermission  = "silent-permission"   // never answers the permission request
	clientNeverCancels      = "never-cancel"        // allows the tool at once, never cancels
	clientCancelsRequest    = "cancel-request"      // cancels the turn with $/cancel_request on the prompt
	clientQuitsMidTurn      = "quit-mid-turn"       // closes acpcheck's stdin once the turn's requests came
	clientNoInitialize      = "no-initialize"       // sends nothing at all
	clientFloodsNotJSON     = "flood-not-json"      // sends thousands of lines that are not JSON, then goes on correctly
	clientAsksV2            = "v2"                  // asks for protocol version 2
	clientAnswersEarly      = "answer-early"        // v2: answers the permission cancelled right after its session/cancel, not waiting for acpcheck's $/cancel_request
	clientCancelsToolCall   = "cancel-tool-call"    // v2: cancels the work's tool call with tool_call/cancel
	clientWithdrawsHeld     = "withdraw-held"       // v2: sends a second prompt, held behind the work, withdraws it with $/cancel_request, then cancels the work
	clientOffersNothing     = "offers-nothing"      // offers no terminal and no file read
	clientSignalsAcpcheck   = "signal"              // SIGTERMs acpcheck once the turn's requests came, and never closes stdin
	clientKillsAcpcheck     = "kill"                // SIGKILLs acpcheck once the turn is answered, as clients that kill their agent on exit do
	clientHangsUp           = "hangup"              // SIGHUPs acpcheck once the turn's requests came, as a terminal closing under it does
	clientQuitsOwing        = "quit-owing"          // cancels, answers nothing it owes, and closes stdin once the turn is answered
)

// agentModeProc is acpcheck agent run as a process, the JSON report in a
// file.
type agentModeProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  <-chan string
	report string
	stderr *interoptest.SyncBuffer
	exited chan struct{}
}

// startAgentMode starts `acpcheck agent` with short bounds and flags.
func startAgentMode(t *testing.T, flags ...string) *agentModeProc {
	t.Helper()
	p := &agentModeProc{report: filepath.Join(t.TempDir(), "report.json"), stderr: &interoptest.SyncBuffer{}, exited: make(chan struct{})}
	args := append([]string{"agent", "-json", p.report, "-cancel-within", "3s", "-cancel-wait", "1s", "-timeout", "3s", "-idle", "30s"}, flags...)
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), asAcpcheckEnv+"=1")
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.cmd.Stderr = p.stderr
	require.NoError(t, p.cmd.Start())
	p.lines = readLines(out)
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// finish waits for acpcheck to exit and returns its exit status and its
// JSON report.
func (p *agentModeProc) finish(t *testing.T, bound time.Duration) (int, Report) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(bound):
		t.Fatalf("acpcheck agent was still running %s later", bound)
	}
	b, err := os.ReadFile(p.report)
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(b, &rep), "%s", b)
	return p.cmd.ProcessState.ExitCode(), rep
}

// scriptedClient is an ACP client of acpcheck agent, written line by line
// so that it can break each rule alone.
type scriptedClient struct {
	t      *testing.T
	p      *agentModeProc
	faults map[string]bool

	mu       sync.Mutex
	answered map[string]bool // the IDs of acpcheck's requests answered
	session  string
	perm     string // the pending permission request's ID
	wait     string // the pending terminal/wait_for_exit's ID
	read     string // the pending fs/read_text_file's ID
	cancel   bool   // the turn was cancelled
	stop     string // the turn's stopReason (v2: its work's idle state_update's)
	v2       bool   // the client asked for v2 and was answered 2
	held     string // v2: the answer to the held prompt withdrawn
}

func (c *scriptedClient) send(format string, args ...any) {
	_, _ = fmt.Fprintf(c.p.stdin, format+"\n", args...)
}

// answer answers acpcheck's request id once (twice with
// clientAnswersTwice when it was cancelled).
func (c *scriptedClient) answer(id, member string, cancelled bool) {
	c.mu.Lock()
	done := c.answered[id]
	c.answered[id] = true
	c.mu.Unlock()
	if done {
		return
	}
	c.send(`{"jsonrpc":"2.0","id":%s,%s}`, id, member)
	if cancelled && c.faults[clientAnswersTwice] {
		c.send(`{"jsonrpc":"2.0","id":%s,%s}`, id, member)
	}
}

// runScriptedClient runs one turn of a client with faults against
// acpcheck agent and returns its exit status and report.
func runScriptedClient(t *testing.T, faults ...string) (int, Report, string) {
	t.Helper()
	c := runScripted(t, faults...)
	code, rep := c.p.finish(t, time.Minute)
	return code, rep, c.stop
}

// runScripted runs one turn of a client with faults against acpcheck
// agent, and returns the client once it has closed acpcheck's stdin.
func runScripted(t *testing.T, faults ...string) *scriptedClient {
	t.Helper()
	c := &scriptedClient{t: t, p: startAgentMode(t), faults: map[string]bool{}, answered: map[string]bool{}}
	for _, f := range faults {
		c.faults[f] = true
	}
	c.run()
	return c
}

func (c *scriptedClient) run() {
	t := c.t
	if c.faults[clientNoInitialize] {
		return // acpcheck ends it after -timeout
	}
	caps := `{"terminal":true,"fs":{"readTextFile":true}}`
	if c.faults[clientOffersNothing] {
		caps = `{}`
	}
	if c.faults[clientFloodsNotJSON] {
		go func() {
			_, _ = io.WriteString(c.p.stdin, strings.Repeat("not json at all\n", 5000))
		}()
	}
	if c.faults[clientAsksV2] {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"capabilities":{},"info":{"name":"scripted","version":"1.0"}}}`)
	} else {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":%s,"clientInfo":{"name":"scripted","version":"1.0"}}}`, caps)
	}
	c.v2 = strings.Contains(awaitLine(t, c.p.lines, `"id":1,"result"`, 30*time.Second), `"protocolVersion":2`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	var res struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(awaitLine(t, c.p.lines, `"id":2,"result"`, 30*time.Second)), &res))
	c.session = res.Result.SessionID
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"hello"}]}}`, c.session)
	deadline := time.After(time.Minute)
	for c.stop == "" {
		select {
		case l, ok := <-c.p.lines:
			if !ok {
				return
			}
			if !c.take(l) {
				return
			}
		case <-deadline:
			t.Fatal("the turn did not end within a minute")
		}
	}
	if c.faults[clientKillsAcpcheck] {
		require.NoError(t, c.p.cmd.Process.Kill())
		return
	}
	require.NoError(t, c.p.stdin.Close())
}

// take reacts to one line of acpcheck's; false ends the client.
func (c *scriptedClient) take(line string) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
			Path      string          `json:"path"`
			Update    struct {
				SessionUpdate string `json:"sessionUpdate"`
				State         string `json:"state"`
				StopReason    string `json:"stopReason"`
			} `json:"update"`
		} `json:"params"`
		Result struct {
			StopReason string `json:"stopReason"`
		} `json:"result"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	require.NoError(c.t, json.Unmarshal([]byte(line), &m), "acpcheck wrote a line that is not JSON on stdout: %s", line)
	id := string(m.ID)
	switch m.Method {
	case "":
		switch {
		case id == "3" && !c.v2:
			c.stop = m.Result.StopReason
		case id == "4" && m.Error != nil: // the held prompt, withdrawn
			c.held = fmt.Sprint(m.Error.Code)
			c.cancelSession()
		}
	case "session/update":
		if c.v2 && m.Params.Update.SessionUpdate == "state_update" && m.Params.Update.State == "idle" {
			c.stop = m.Params.Update.StopReason
		}
		if c.faults[clientAnswersNote] && c.cancel {
			c.faults[clientAnswersNote] = false
			c.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`)
		}
	case "session/request_permission":
		c.perm = id
		if c.faults[clientNeverCancels] {
			c.answer(id, `"result":{"outcome":{"outcome":"selected","optionId":"allow"}}`, false)
		}
	case "terminal/create":
		c.answer(id, `"result":{"terminalId":"t1"}`, false)
	case "terminal/wait_for_exit":
		c.wait = id
	case "terminal/kill":
		c.answer(id, `"result":{}`, false)
		if c.wait != "" {
			c.answer(c.wait, `"result":{"signal":"SIGKILL"}`, false)
		}
	case "terminal/release":
		c.answer(id, `"result":{}`, false)
	case "fs/read_text_file":
		c.read = id
		go func() { // the read ends when acpcheck lets the file go
			b, err := os.ReadFile(m.Params.Path)
			if err == nil {
				text, _ := json.Marshal(string(b))
				c.answer(id, `"result":{"content":`+string(text)+`}`, false)
			}
		}()
	case "$/cancel_request":
		if c.faults[clientSilentPermission] && string(m.Params.RequestID) == c.perm || c.faults[clientQuitsOwing] {
			break
		}
		if c.v2 && string(m.Params.RequestID) == c.perm { // v2: the permission's answer comes at the agent's cancel
			c.answerPermission(true)
			break
		}
		code := -32800
		if c.faults[clientOtherError] {
			code = -32603
		}
		c.answer(string(m.Params.RequestID), fmt.Sprintf(`"error":{"code":%d,"message":"Request cancelled"}`, code), true)
	}
	if !c.cancel && c.perm != "" && (c.wait != "" && c.read != "" || c.faults[clientOffersNothing] || c.v2) {
		return c.cancelTurn()
	}
	return true
}

// cancelTurn cancels the turn the way the client's faults say, or not.
func (c *scriptedClient) cancelTurn() bool {
	c.cancel = true
	switch {
	case c.faults[clientNeverCancels]:
		return true
	case c.faults[clientQuitsMidTurn]:
		_ = c.p.stdin.Close()
		return false
	case c.faults[clientSignalsAcpcheck]:
		_ = c.p.cmd.Process.Signal(os.Interrupt)
		return false
	case c.faults[clientHangsUp]:
		_ = c.p.cmd.Process.Signal(syscall.SIGHUP)
		return false
	case c.faults[clientCancelsRequest]:
		c.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}`)
	case c.faults[clientCancelsToolCall]:
		c.send(`{"jsonrpc":"2.0","id":5,"method":"tool_call/cancel","params":{"sessionId":%q,"toolCallId":%q}}`, c.session, agentToolCallID)
	case c.faults[clientWithdrawsHeld]:
		// The session/cancel follows the held prompt's -32800 (take).
		c.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"held"}]}}`, c.session)
		c.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":4}}`)
	default:
		c.cancelSession()
	}
	if c.faults[clientUnknownID] {
		c.send(`{"jsonrpc":"2.0","id":99,"result":{}}`)
	}
	if c.faults[clientLogLine] {
		c.send("client: cancelled")
	}
	return true
}

// cancelSession sends session/cancel and answers the pending permission
// as the client's faults say: in v1 at once, in v2 at acpcheck's
// $/cancel_request unless clientAnswersEarly.
func (c *scriptedClient) cancelSession() {
	c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, c.session)
	if !c.v2 || c.faults[clientAnswersEarly] {
		c.answerPermission(false)
	}
}

// answerPermission answers the pending permission request after a cancel:
// cancelled, or as the client's faults say.
func (c *scriptedClient) answerPermission(cancelled bool) {
	switch {
	case c.faults[clientGrantsAfterCancel]:
		c.answer(c.perm, `"result":{"outcome":{"outcome":"selected","optionId":"allow"}}`, cancelled)
	case c.faults[clientOtherError] && cancelled:
		c.answer(c.perm, `"error":{"code":-32603,"message":"Internal error"}`, cancelled)
	case !c.faults[clientSilentPermission] && !c.faults[clientQuitsOwing]:
		c.answer(c.perm, `"result":{"outcome":{"outcome":"cancelled"}}`, cancelled)
	}
}

// failedRules are the rules the report fails, each with a side it blames.
func failedRules(rep Report) []string {
	var out []string
	for _, r := range rep.Results {
		for _, f := range r.Findings {
			if s := f.Side + " " + r.ID; !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// acpcheck agent catches a client made to break each client rule alone,
// blaming the client, and passes a correct client on every rule, whichever
// way it cancels.
func TestAgentModeJudgesTheClient(t *testing.T) {
	for _, c := range []struct {
		name   string
		faults []string
		failed []string
	}{
		{"correct, session/cancel", nil, nil},
		{"correct, $/cancel_request", []string{clientCancelsRequest}, nil},
		{"permission granted after its own cancel", []string{clientGrantsAfterCancel}, []string{"client " + ruleClientPermission.ID}},
		{"cancelled request answered with another error", []string{clientOtherError}, []string{"client " + ruleClientCancelled.ID}},
		{"cancelled request answered twice", []string{clientAnswersTwice}, []string{"client " + ruleOneAnswer.ID}},
		{"a notification answered", []string{clientAnswersNote}, []string{"client " + ruleNoteUnanswered.ID}},
		{"an unknown ID answered", []string{clientUnknownID}, []string{"client " + ruleUnknownID.ID}},
		{"a log line written to the agent", []string{clientLogLine}, []string{"client " + ruleFraming.ID}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, rep, stop := runScriptedClient(t, c.faults...)
			assert.Equal(t, "cancelled", stop)
			assert.ElementsMatch(t, c.failed, failedRules(rep))
			st := statuses(&rep)
			for _, r := range rep.Results {
				if len(c.failed) == 0 && r.ID != ruleErrorMessage.ID && !(r.ID == ruleClientPermission.ID && slices.Contains(c.faults, clientCancelsRequest)) {
					assert.Equal(t, Pass, r.Status, "%s: %s %+v", r.ID, r.Why, r.Findings)
				}
			}
			if len(c.failed) == 0 {
				assert.Equal(t, 0, code)
			} else {
				assert.Equal(t, 1, code, "a MUST broken")
			}
			assert.NotEqual(t, NotBrought, st[ruleClientCancelled.ID], "acpcheck cancelled requests of its own")
			assert.Equal(t, "the client scripted 1.0, with acpcheck agent as its agent", rep.subject())
		})
	}
}

// acpcheck agent serves a client asking for v2 in v2, and judges it by the
// v2 form of the client rules: a correct client passes whichever way it
// cancels (session/cancel, answering the permission early or at
// acpcheck's $/cancel_request; tool_call/cancel; $/cancel_request on a
// held prompt), and a client breaking one rule alone is caught, blamed.
func TestAgentModeJudgesAV2Client(t *testing.T) {
	for _, c := range []struct {
		name   string
		faults []string
		stop   string
		failed []string
		ended  string
	}{
		{"correct, session/cancel", nil, "cancelled", nil, "1 cancelled by session/cancel"},
		{"correct, session/cancel, permission answered early", []string{clientAnswersEarly}, "cancelled", nil, "1 cancelled by session/cancel"},
		{"correct, tool_call/cancel", []string{clientCancelsToolCall}, "end_turn", nil, "1 whose tool call was cancelled by tool_call/cancel"},
		{"correct, a held prompt withdrawn by $/cancel_request", []string{clientWithdrawsHeld}, "cancelled", nil, "1 cancelled by session/cancel, 1 prompt held behind running work and withdrawn"},
		{"permission granted at acpcheck's cancel after its own session/cancel", []string{clientGrantsAfterCancel}, "cancelled", []string{"client " + ruleClientPermission.ID}, "1 cancelled by session/cancel"},
		{"permission granted early after its own session/cancel", []string{clientGrantsAfterCancel, clientAnswersEarly}, "cancelled", []string{"client " + ruleClientPermission.ID}, "1 cancelled by session/cancel"},
		{"cancelled permission answered with another error", []string{clientOtherError}, "cancelled", []string{"client " + ruleClientCancelled.ID}, "1 cancelled by session/cancel"},
		{"cancelled permission answered twice", []string{clientAnswersTwice}, "cancelled", []string{"client " + ruleOneAnswer.ID}, "1 cancelled by session/cancel"},
		{"cancelled permission never answered", []string{clientSilentPermission}, "cancelled", []string{"client " + ruleClientCancelled.ID}, "1 cancelled by session/cancel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sc := runScripted(t, append([]string{clientAsksV2}, c.faults...)...)
			code, rep := sc.p.finish(t, time.Minute)
			require.True(t, sc.v2, "acpcheck agent answered initialize with protocolVersion 2")
			assert.Equal(t, c.stop, sc.stop, "the work's idle state_update")
			assert.ElementsMatch(t, c.failed, failedRules(rep))
			assert.Contains(t, rep.Ended, c.ended)
			assert.Empty(t, rep.Wire)
			assert.NotEmpty(t, rep.WireV2)
			for _, r := range rep.Results {
				for _, f := range r.Findings {
					assert.Equal(t, 2, f.Protocol)
				}
			}
			st := statuses(&rep)
			if len(c.failed) == 0 {
				assert.Equal(t, 0, code)
				for _, r := range rep.Results {
					// An answer sent right behind session/cancel may come
					// before acpcheck's $/cancel_request goes out: then
					// acpcheck cancelled nothing the client had not answered.
					early := r.ID == ruleClientCancelled.ID && slices.Contains(c.faults, clientAnswersEarly)
					if r.ID != ruleErrorMessage.ID && !early {
						assert.Equal(t, Pass, r.Status, "%s: %s %+v", r.ID, r.Why, r.Findings)
					}
				}
			} else {
				assert.Equal(t, 1, code, "a MUST broken")
			}
			if !slices.Contains(c.faults, clientSilentPermission) { // never answered: client-cancel-answered's
				assert.NotEqual(t, NotBrought, st[ruleClientPermission.ID], "the client answered the permission request its session/cancel or acpcheck cancelled")
			}
			if slices.Contains(c.faults, clientWithdrawsHeld) {
				assert.Equal(t, "-32800", sc.held, "the held prompt, withdrawn before insertion")
			}
		})
	}
}

// A client that never cancels gets turns that end end_turn, and the
// cancellation rules not brought about, never passed; a hostile client
// gets a verdict too, and acpcheck exits within its bounds.
func TestAgentModeUncancelledAndHostileClients(t *testing.T) {
	for _, c := range []struct {
		name     string
		faults   []string
		stop     string
		failed   []string
		status   map[string]Status
		ended    string
		exitCode int
	}{
		{"never cancels", []string{clientNeverCancels}, "end_turn", nil,
			map[string]Status{ruleClientPermission.ID: NotBrought, ruleClientCancelled.ID: NotBrought, ruleOneAnswer.ID: Pass}, "1 not cancelled in time (end_turn)", 0},
		{"never answers the permission after its cancel", []string{clientSilentPermission}, "cancelled", []string{"client " + ruleClientCancelled.ID},
			nil, "1 cancelled by session/cancel", 1},
		{"never initializes", []string{clientNoInitialize}, "", nil,
			map[string]Status{ruleFraming.ID: NotBrought, ruleClientPermission.ID: NotBrought}, "the client sent no initialize within -timeout 3s", 0},
		{"floods lines that are not JSON", []string{clientFloodsNotJSON}, "cancelled", []string{"client " + ruleFraming.ID}, nil, "1 cancelled by session/cancel", 1},
		{"closes stdin mid-turn", []string{clientQuitsMidTurn}, "", nil,
			map[string]Status{ruleClientPermission.ID: NotBrought}, "the client closed acpcheck's stdin", 0},
		{"signals acpcheck mid-turn", []string{clientSignalsAcpcheck}, "", nil,
			map[string]Status{ruleClientPermission.ID: NotBrought}, "acpcheck was signalled to stop", 0},
		{"hangs up on acpcheck mid-turn", []string{clientHangsUp}, "", nil,
			map[string]Status{ruleClientPermission.ID: NotBrought}, "acpcheck was signalled to stop", 0},
		// Between turns, having read the cancelled turn's answer: what it
		// owed is unanswered, not cut short (acpx 0.1.15 at its prompt).
		// acpcheck cancelled the permission request itself after
		// -cancel-wait: client-cancel-answered judges it with the others.
		{"quits between turns owing answers", []string{clientQuitsOwing}, "cancelled", []string{"client " + ruleClientCancelled.ID},
			nil, "1 cancelled by session/cancel", 1},
		{"v2, never cancels", []string{clientAsksV2, clientNeverCancels}, "end_turn", nil,
			map[string]Status{ruleClientPermission.ID: NotBrought, ruleClientCancelled.ID: NotBrought, ruleOneAnswer.ID: Pass}, "1 not cancelled in time (end_turn)", 0},
		{"v2, closes stdin mid-work", []string{clientAsksV2, clientQuitsMidTurn}, "", nil,
			map[string]Status{ruleClientPermission.ID: NotBrought}, "the client closed acpcheck's stdin", 0},
		{"v2, signals acpcheck mid-work", []string{clientAsksV2, clientSignalsAcpcheck}, "", nil,
			map[string]Status{ruleClientPermission.ID: NotBrought}, "acpcheck was signalled to stop", 0},
		{"offers no terminal, no file read", []string{clientOffersNothing}, "cancelled", nil, map[string]Status{ruleClientPermission.ID: Pass, ruleClientCancelled.ID: NotBrought}, "1 cancelled by session/cancel", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, rep, stop := runScriptedClient(t, c.faults...)
			assert.Equal(t, c.stop, stop)
			assert.ElementsMatch(t, c.failed, failedRules(rep))
			st := statuses(&rep)
			for id, want := range c.status {
				assert.Equal(t, want, st[id], id)
			}
			assert.Contains(t, rep.Ended, c.ended)
			assert.Equal(t, c.exitCode, code)
		})
	}
}

// examples/client, given acpcheck agent as its agent's command, passes
// every client rule acpcheck agent can bring about, whichever way it
// cancels, in v1 and in v2 (where a turn is cancelled by session/cancel
// alone, and acpcheck cancels its permission request with $/cancel_request).
func TestExampleClientPassesAgentMode(t *testing.T) {
	client := buildExampleClient(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"session/cancel", []string{"-cancel", "session"}},
		{"$/cancel_request", []string{"-cancel", "request"}},
		{"v2 session/cancel", []string{"-cancel", "session", "-protocol", "2", "-await", "session/request_permission"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			report := filepath.Join(dir, "report.json")
			agent, exited := agentScript(t, dir, "-json", report, "-cancel-wait", "2s")
			out, err := exec.Command(client, append([]string{"-agent", agent, "-timeout", "30s"}, c.args...)...).CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), "stopReason: cancelled")
			exited()
			b := readFile(t, report)
			var rep Report
			require.NoError(t, json.Unmarshal(b, &rep))
			for _, r := range rep.Results {
				assert.NotEqual(t, Fail, r.Status, "%s: %+v", r.ID, r.Findings)
			}
			st := statuses(&rep)
			assert.Equal(t, Pass, st[ruleClientCancelled.ID], "acpcheck cancelled the terminal (v2: the permission request), and the client answered")
			assert.Contains(t, rep.Ended, "1 cancelled by "+map[string]string{"session": turnBySessionCancel, "request": turnByCancelRequest}[c.args[1]])
			if c.args[1] == "session" {
				assert.Equal(t, Pass, st[ruleClientPermission.ID], "the permission request pending at the client's session/cancel, answered cancelled")
			}
			assert.Equal(t, Pass, st[ruleOneAnswer.ID])
			assert.Equal(t, Pass, st[ruleFraming.ID])
		})
	}
}

// The TypeScript SDK's clients (on SDK 2.4.0), given acpcheck agent as
// their agent's command, pass every client rule: interop/src/client.ts in
// v1, and src/v2-client.ts in v2, whose own checks (the turn's shape on the
// wire, each message valid by the SDK's v2 schema) pass too.
func TestTSClientPassesAgentMode(t *testing.T) {
	for _, c := range []struct {
		script, scenario, client string
		v2                       bool
	}{
		{"src/client.ts", "session-cancel", "acprpc-interop-ts-client", false},
		{"src/v2-client.ts", "permission-cancel", "acprpc-interop-ts-v2-client", true},
	} {
		t.Run(c.script, func(t *testing.T) {
			t.Parallel()
			rep, clientReport := runTSClient(t, c.script, c.scenario)
			for _, r := range rep.Results {
				assert.NotEqual(t, Fail, r.Status, "%s: %+v", r.ID, r.Findings)
			}
			st := statuses(&rep)
			assert.Equal(t, Pass, st[ruleClientCancelled.ID])
			assert.Equal(t, Pass, st[ruleClientPermission.ID])
			assert.Contains(t, rep.Ended, "1 cancelled by session/cancel")
			assert.Contains(t, rep.Client, c.client)
			assert.Equal(t, c.v2, len(rep.WireV2) > 0, "the conversation's version")
			if c.v2 {
				var own struct {
					Pass   bool            `json:"pass"`
					Checks map[string]bool `json:"checks"`
				}
				require.NoError(t, json.Unmarshal(clientReport, &own))
				assert.True(t, own.Pass, "v2-client.ts's own checks of acpcheck agent's v2 work: %v", own.Checks)
			}
		})
	}
}

// runTSClient runs a TypeScript client's scenario with acpcheck agent as
// its agent, and returns acpcheck's report and the client's.
func runTSClient(t *testing.T, script, scenario string) (Report, []byte) {
	t.Helper()
	interop, err := filepath.Abs("../../interop")
	require.NoError(t, err)
	node := interoptest.RequireNode(t, interop)
	dir := t.TempDir()
	report, clientReport := filepath.Join(dir, "report.json"), filepath.Join(dir, "client.json")
	cmd := exec.Command(node, "--import", "tsx", script, "--scenario", scenario, "--timeout", "15000",
		"--report", clientReport, "--", os.Args[0], "agent", "-json", report, "-cancel-wait", "2s")
	cmd.Dir = interop
	cmd.Env = append(os.Environ(), asAcpcheckEnv+"=1") // the clients pass their environment to the agent
	cmd.WaitDelay = 5 * time.Second
	done := make(chan struct{})
	var out []byte
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not end within 2 minutes", script)
	}
	require.NoError(t, err, "%s", out)
	var rep Report
	require.NoError(t, json.Unmarshal(readFile(t, report), &rep), "%s", out)
	return rep, readFile(t, clientReport)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// A client that kills its agent as soon as the turn is answered (coder's
// example client does, on exit) leaves the report of every turn that
// ended: acpcheck writes it, whole, as each turn ends and before its
// answer goes out, and replaces it at the conversation's end.
func TestAgentModeReportSurvivesAClientThatKillsIt(t *testing.T) {
	c := runScripted(t, clientKillsAcpcheck)
	assert.Equal(t, "cancelled", c.stop)
	_, rep := c.p.finish(t, time.Minute)
	assert.Contains(t, rep.Ended, "as of the end of turn 1")
	st := statuses(&rep)
	assert.Equal(t, Pass, st[ruleClientPermission.ID], "the permission request pending at the client's session/cancel, answered cancelled")
	assert.Equal(t, Pass, st[ruleClientCancelled.ID])
	for _, r := range rep.Results {
		assert.NotEqual(t, Fail, r.Status, "%s: %+v", r.ID, r.Findings)
	}
}
