package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testOptions checks the test binary as an agent with faults, with bounds
// short enough for tests and long enough for a loaded machine.
func testOptions(t *testing.T, faults ...string) runOptions {
	return runOptions{
		Argv:        []string{os.Args[0]},
		Env:         []string{agentEnv + "=" + strings.Join(append([]string{"correct"}, faults...), ",")},
		Prompt:      "Say hello.",
		SlowPrompt:  "Count slowly.",
		Cwd:         t.TempDir(),
		Timeout:     10 * time.Second,
		CancelAfter: 5 * time.Second,
		CancelWait:  3 * time.Second,
		ExitWait:    2 * time.Second,
		Settle:      100 * time.Millisecond,
	}
}

// failed lists the rules the report failed, and checks that each finding
// shows wire lines that exist, unless the rule is about the process.
func failed(t *testing.T, rep *Report) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Status != Fail {
			continue
		}
		out = append(out, r.ID)
		require.NotEmpty(t, r.Findings, r.ID)
		for _, f := range r.Findings {
			if r.ID != ruleStdinExit.ID && r.ID != ruleNoLeftover.ID {
				assert.NotEmpty(t, f.Lines, "%s: %s", r.ID, f.Detail)
			}
			for _, seq := range f.Lines {
				_, ok := rep.line(f.Protocol, seq)
				assert.True(t, ok, "%s cites line %d, which is not on the wire", r.ID, seq)
			}
		}
	}
	return out
}

// The correct agent passes every rule, also when acpcheck offers it a
// terminal, which its slow turn then asks for and cancels; without one, a
// v1 turn has no request of its own to cancel.
func TestCorrectAgentPassesEveryRule(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			o := testOptions(t)
			o.OfferTerminal = terminal
			rep, err := runChecks(context.Background(), o)
			require.NoError(t, err)
			assertPassesEveryRule(t, rep, terminal)
			assert.Equal(t, 0, rep.ExitCode())
		})
	}
}

// assertPassesEveryRule checks that a correct agent passed every rule: all
// of them, but for own-requests-cancelled when acpcheck offered no terminal,
// since a v1 turn then has no request of its own to cancel.
func assertPassesEveryRule(t *testing.T, rep *Report, terminal bool) {
	t.Helper()
	for _, r := range rep.Results {
		if r.ID == ruleOwnRequests.ID && !terminal {
			assert.Equal(t, NotBrought, r.Status, "%s: %+v", r.ID, r)
			continue
		}
		assert.Equal(t, Pass, r.Status, "%s: %+v", r.ID, r)
	}
}

// notBroughtWithout is how many rules a correct agent leaves not brought
// about, with or without a terminal offered.
func notBroughtWithout(terminal bool) int {
	if terminal {
		return 0
	}
	return 1
}

// brokenRule is a fault of the test agent and the rules it breaks.
type brokenRule struct {
	fault string
	fails []string
	// process: the fault is in how the agent's process behaves, which a
	// remote agent's check cannot see (or, exiting, would end its server).
	process bool
	// nonJSON: the fault shows only on a line that is not JSON, which
	// Streamable HTTP does not carry.
	nonJSON bool
	// terminal: the fault shows only when acpcheck offers a terminal.
	terminal bool
}

// brokenRules are the faults, each breaking the rule its check must catch,
// and no other check may blame the agent for it.
var brokenRules = []brokenRule{
	{fault: faultCancelError, fails: []string{ruleCancelStop.ID, ruleCancelRequest.ID, ruleSessionClose.ID, ruleCancelMeta.ID}},   // every cancel ends in its error
	{fault: faultCancelEndTurn, fails: []string{ruleCancelStop.ID, ruleCancelRequest.ID, ruleSessionClose.ID, ruleCancelMeta.ID}}, // every cancel ends in end_turn
	{fault: faultCancelIgnored, fails: []string{ruleCancelStop.ID, ruleOneAnswer.ID, ruleSessionClose.ID, ruleCancelMeta.ID}},
	{fault: faultCancelTwice, fails: []string{ruleOneAnswer.ID, ruleCancelRequest.ID}}, // the prompt cancelled by $/cancel_request is answered twice too
	{fault: faultUpdateAfterCancel, fails: []string{ruleUpdateAfter.ID}},
	{fault: faultEmptyTurnAfter, fails: []string{ruleTurnAfter.ID, ruleUpdateAfter.ID}},
	{fault: faultAnswerNote, fails: []string{ruleNoteUnanswered.ID, ruleEnvelope.ID}}, // its answers have no id member
	{fault: faultCancelReqError, fails: []string{ruleCancelRequest.ID}},
	{fault: faultAnswerUnknownID, fails: []string{ruleUnknownID.ID, ruleOneAnswer.ID}}, // the cancel of initialize's ID answered: its second answer
	{fault: faultNoParseError, fails: []string{ruleParseError.ID}, nonJSON: true},
	{fault: faultExitOnParseError, fails: []string{ruleParseError.ID, ruleMethodNotFound.ID}, process: true},
	{fault: faultUnknownResult, fails: []string{ruleMethodNotFound.ID}},
	{fault: faultIgnoreEOF, fails: []string{ruleStdinExit.ID}, process: true},
	{fault: faultBadVersion, fails: []string{ruleInitialize.ID}},
	{fault: faultNoSessionID, fails: []string{ruleSessionNew.ID}},                     // the scenarios that need a session are not brought about
	{fault: faultNoStopReason, fails: []string{rulePromptTurn.ID, ruleIdleCancel.ID}}, // the quick prompt after the idle cancel too
	{fault: faultV2Above, fails: []string{ruleV2Initialize.ID}},
	{fault: faultV2StopAnswer, fails: []string{ruleV2PromptAnswer.ID}},
	{fault: faultV2TwoIdles, fails: []string{ruleV2OneIdle.ID}},
	{fault: faultV2NoIdle, fails: []string{ruleV2CancelIdle.ID, ruleV2Close.ID}}, // close ends the work as cancel does
	{fault: faultV2EndTurnIdle, fails: []string{ruleV2CancelIdle.ID}},
	{fault: faultV2KeepRequest, fails: []string{ruleV2OwnRequests.ID}},
	{fault: faultV2CloseError, fails: []string{ruleV2Close.ID}},
	{fault: faultV2UpdateIdle, fails: []string{ruleUpdateAfter.ID}},
	{fault: faultUninvited, fails: []string{rulePromptTurn.ID, ruleIdleCancel.ID}}, // the finding names the call never offered first
	{fault: faultLateAnswer, fails: []string{ruleOneAnswer.ID}, process: true},     // written as its stdin ends
	{fault: faultV2EntityError, fails: []string{ruleV2Entity.ID}},
	{fault: faultV2EntityNoFinal, fails: []string{ruleV2Entity.ID}},
	{fault: faultV2EntityAnyID, fails: []string{ruleV2Entity.ID}},
	{fault: faultCancelReqEndTurn, fails: []string{ruleCancelRequest.ID}},
	{fault: faultKeepTerminal, fails: []string{ruleOwnRequests.ID}, terminal: true},
	{fault: faultLeaveChild, fails: []string{ruleNoLeftover.ID}, process: true},
	{fault: faultStdoutLog, fails: []string{ruleFraming.ID}},
	{fault: faultBadUTF8, fails: []string{ruleFraming.ID}},
	{fault: faultRawNewline, fails: []string{ruleFraming.ID}},
	{fault: faultBatch, fails: []string{ruleFraming.ID}},
	{fault: faultAnswerBoth, fails: []string{ruleEnvelope.ID}},
	{fault: faultCodeString, fails: []string{ruleEnvelope.ID}},
	{fault: faultMessageNewline, fails: []string{ruleErrorMessage.ID}},
	{fault: faultIDAsNumber, fails: []string{ruleIDEcho.ID, ruleUnknownID.ID, ruleOneAnswer.ID}}, // the string ID, answered as the number, was never answered
	{fault: faultIgnoreExt, fails: []string{ruleExtRequest.ID, ruleOneAnswer.ID}},
	{fault: faultCloseKeepsTurn, fails: []string{ruleSessionClose.ID}},
	{fault: faultCancelMetaIgnored, fails: []string{ruleCancelMeta.ID}},
	{fault: faultStaleCancel, fails: []string{ruleIdleCancel.ID}},
	{fault: faultDaemon, fails: []string{ruleNoLeftover.ID}, process: true},
	{fault: faultParseNoID, fails: []string{ruleParseError.ID, ruleEnvelope.ID}, nonJSON: true}, // an answer without an id member breaks the envelope too
	// Its turn ends cancelled once its open permission request is answered
	// cancelled, and never on session/cancel: the prompt of the turn
	// cancelled with its permission granted is never answered.
	{fault: faultFollowsOutcome, fails: []string{ruleCancelStop.ID, ruleOneAnswer.ID, ruleSessionClose.ID}}, // session/close is ignored as session/cancel is
}

// Every rule has an agent that breaks it among brokenRules.
func TestEveryRuleHasABreakingAgent(t *testing.T) {
	caught := map[string]bool{}
	for _, c := range brokenRules {
		for _, id := range c.fails {
			caught[id] = true
		}
	}
	for _, rule := range allRules {
		assert.True(t, caught[rule.ID], "no fault of the test agent breaks %s", rule.ID)
	}
}

func TestEachBrokenRuleIsCaught(t *testing.T) {
	for _, c := range brokenRules {
		if c.fault == faultLeaveChild && !canFindLeftovers {
			continue
		}
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			o := testOptions(t, c.fault)
			o.OfferTerminal = c.terminal
			rep, err := runChecks(context.Background(), o)
			require.NoError(t, err)
			assert.ElementsMatch(t, c.fails, failed(t, rep))
			assert.Equal(t, exitFor(c.fails), rep.ExitCode(), "only a broken MUST fails the run")
		})
	}
}

// exitFor is the exit status of a run that fails the rules with these IDs:
// 1 if one of them is a MUST.
func exitFor(ids []string) int {
	for _, rule := range allRules {
		if slices.Contains(ids, rule.ID) && rule.Tier == TierMust {
			return 1
		}
	}
	return 0
}

// An agent without v2 is checked in v1, and v2's rules are not brought
// about.
func TestV1OnlyAgent(t *testing.T) {
	rep, err := runChecks(context.Background(), testOptions(t, faultV1Only))
	require.NoError(t, err)
	assert.Empty(t, failed(t, rep))
	assert.Equal(t, Pass, rep.result(ruleV2Initialize.ID).Status)
	for _, rule := range v2Rules {
		assert.Equal(t, NotBrought, rep.result(rule.ID).Status, rule.ID)
		assert.Contains(t, rep.result(rule.ID).Why, "does not offer v2")
	}
	assert.Equal(t, 0, rep.ExitCode())
}

// An agent may ignore $/cancel_request in v1: the scenario is reported as
// not brought about, never passed, and the run still exits 0.
func TestIgnoredCancelRequestIsNotBroughtAbout(t *testing.T) {
	rep, err := runChecks(context.Background(), testOptions(t, faultIgnoreCancelReq))
	require.NoError(t, err)
	assert.Empty(t, failed(t, rep))
	assert.Equal(t, NotBrought, rep.result(ruleCancelRequest.ID).Status)
	assert.Contains(t, rep.result(ruleCancelRequest.ID).Why, "$/cancel_request")
	assert.Equal(t, 0, rep.ExitCode())
}

// A slow prompt that ends by itself cannot be cancelled: said, not passed.
func TestTurnThatCannotBeCancelledIsNotBroughtAbout(t *testing.T) {
	o := testOptions(t)
	o.SlowPrompt = "quick"
	rep, err := runChecks(context.Background(), o)
	require.NoError(t, err)
	assert.Empty(t, failed(t, rep))
	for _, id := range []string{ruleCancelStop.ID, ruleTurnAfter.ID, ruleCancelRequest.ID} {
		assert.Equal(t, NotBrought, rep.result(id).Status, id)
	}
}

// The exit status of run: 0 only when every rule that could be brought
// about passed (rules not brought about do not count against it), 1 when any
// rule failed, 2 when the agent could not be run at all (it could not be
// started, or it ended its output before answering initialize), each as
// the command line gives it.
func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		name  string
		agent []string // the agent's command: the test agent unless set
		spec  string   // the test agent's faults
		code  int
		says  string // on stderr
	}{
		{name: "every rule passed", spec: "correct", code: 0},
		{name: "passed or not brought about", spec: faultIgnoreCancelReq, code: 0},
		{name: "a rule failed", spec: faultCancelEndTurn, code: 1},
		{name: "a rule failed beside not brought about", spec: faultIgnoreCancelReq + "," + faultAnswerNote, code: 1},
		{name: "exits before initialize is answered", spec: faultNoOutput, code: 2, says: "before answering initialize"},
		{name: "cannot be started", agent: []string{filepath.Join(t.TempDir(), "no-such-agent")}, code: 2, says: "cannot start the agent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(agentEnv, c.spec)
			agent := c.agent
			if agent == nil {
				agent = []string{os.Args[0]}
			}
			args := append([]string{"run", "-json", "-timeout", "10s", "-cancel-after", "5s", "-cancel-wait", "3s", "-exit-wait", "2s",
				"-settle", "100ms", "-slow-prompt", "Count slowly.", "--"}, agent...)
			var stdout, stderr bytes.Buffer
			require.Equal(t, c.code, mainCode(context.Background(), args, &stdout, &stderr), "%s", stderr.String())
			if c.code == 2 {
				assert.Contains(t, stderr.String(), c.says)
				assert.Empty(t, stdout.String(), "no report of an agent that could not be run")
				return
			}
			var rep Report
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
			statuses := map[Status]int{}
			for _, r := range rep.Results {
				statuses[r.Status]++
			}
			assert.Equal(t, c.code == 1, statuses[Fail] > 0, "%v", statuses)
			if c.spec == faultIgnoreCancelReq {
				assert.Positive(t, statuses[NotBrought], "a rule not brought about does not fail the run")
			}
		})
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"frobnicate"},
		{"run"},
		{"run", "-timeout", "0", "--", "agent"},
		{"run", "-prompt", "", "--", "agent"},
		{"run", "-no-such-flag", "--", "agent"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, mainCode(context.Background(), args, &stdout, &stderr), "%q", args)
		assert.NotEmpty(t, stderr.String(), "%q", args)
	}
}

// The JSON report carries every rule and the whole wire, and the exit
// status says a rule failed.
func TestJSONReport(t *testing.T) {
	o := testOptions(t, faultAnswerNote)
	args := []string{"run", "-json", "-timeout", "10s", "-cancel-wait", "3s", "-settle", "100ms", "-slow-prompt", o.SlowPrompt, "--", os.Args[0]}
	t.Setenv(agentEnv, strings.TrimPrefix(o.Env[0], agentEnv+"="))
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, mainCode(context.Background(), args, &stdout, &stderr), stderr.String())
	var rep Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	assert.Len(t, rep.Results, len(allRules))
	res := rep.result(ruleNoteUnanswered.ID)
	require.Equal(t, Fail, res.Status)
	require.NotEmpty(t, res.Findings)
	cited := res.Findings[0].Lines
	require.Len(t, cited, 2)
	assert.Contains(t, rep.Wire[cited[0]-1].Raw, `"$/cancel_request"`)
	assert.Equal(t, `{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}`, rep.Wire[cited[1]-1].Raw)
	assert.Equal(t, fromAgent, rep.Wire[cited[1]-1].Dir)
	// The agent answered three cancels: the prompt's, and the probes' of an
	// unknown and of an answered ID; each answer is laid at its own.
	require.Len(t, res.Findings, 3)
	notes := map[int]bool{}
	for _, f := range res.Findings {
		notes[f.Lines[0]] = true
		assert.Contains(t, rep.Wire[f.Lines[0]-1].Raw, `"$/cancel_request"`)
	}
	assert.Len(t, notes, 3)
}

// examples/agent, built on acprpc, passes every rule.
func TestExampleAgentPassesEveryRule(t *testing.T) {
	bin := buildExampleAgent(t)
	for _, terminal := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			o := testOptions(t)
			o.Argv, o.Env, o.OfferTerminal = []string{bin}, nil, terminal
			rep, err := runChecks(context.Background(), o)
			require.NoError(t, err)
			assertPassesEveryRule(t, rep, terminal)
			var text bytes.Buffer
			rep.WriteText(&text)
			assert.Contains(t, text.String(), fmt.Sprintf("%d passed, 0 failed, %d not brought about", len(allRules)-notBroughtWithout(terminal), notBroughtWithout(terminal)))
			assert.NotEmpty(t, rep.WireV2, "examples/agent offers v2, and is checked in it")
			if terminal { // its v1 turns ask for the terminal, and the cancelled one cancels it
				assert.Contains(t, wireText(rep.Wire), `"method":"terminal/create"`)
			}
		})
	}
}

func wireText(lines []Line) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Raw + "\n")
	}
	return b.String()
}

// buildExampleAgent builds examples/agent from the workspace.
func buildExampleAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agent")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/acpkit/acprpc/examples/agent").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// run -json keeps a line that is not UTF-8 byte for byte, in raw_base64,
// where a JSON string would have made each bad byte U+FFFD; the line breaks
// framing, a MUST.
func TestJSONReportKeepsBytesThatAreNotUTF8(t *testing.T) {
	t.Setenv(agentEnv, "correct,"+faultNotUTF8)
	args := []string{"run", "-json", "-timeout", "10s", "-cancel-wait", "3s", "-settle", "100ms", "-slow-prompt", "Count slowly.", "--", os.Args[0]}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, mainCode(context.Background(), args, &stdout, &stderr), stderr.String())
	var rep Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	assert.Equal(t, Fail, rep.result(ruleFraming.ID).Status)
	var kept []string
	for _, l := range rep.Wire {
		if bytes.Contains(l.bytes(), []byte("caf\xe9")) {
			kept = append(kept, string(l.bytes()))
		}
	}
	require.Len(t, kept, 3, "the lines with the byte that is not UTF-8 (each quick turn's), as the agent sent them")
	assert.Contains(t, kept[0], `"text":"caf`+"\xe9"+`"`)
}

// An agent that crashes mid-run is noticed at once: no later wait runs to
// its full -timeout for a line that cannot come, and stdin-exit is not
// passed for an agent that was already gone.
func TestAgentCrashedMidRunIsNoticedAtOnce(t *testing.T) {
	o := testOptions(t, faultExitMidTurn)
	o.Timeout = time.Minute // far above the run's length, unless it waits out a bound
	start := time.Now()
	rep, err := runChecks(context.Background(), o)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), o.Timeout/2, "the run waited for a line from an agent that was gone")
	res := rep.result(ruleCancelStop.ID)
	require.Equal(t, Fail, res.Status, "%+v", res)
	assert.Equal(t, NotBrought, rep.result(ruleStdinExit.ID).Status)
	assert.Contains(t, rep.result(ruleStdinExit.ID).Why, "exited before its stdin closed")
}

// A turn that fails after the agent called a method acpcheck never offered
// is blamed on that call first: the finding names it and cites it before
// the prompt's error.
func TestFindingNamesTheCallNeverOffered(t *testing.T) {
	rep, err := runChecks(context.Background(), testOptions(t, faultUninvited))
	require.NoError(t, err)
	res := rep.result(rulePromptTurn.ID)
	require.Equal(t, Fail, res.Status)
	f := res.Findings[0]
	assert.Contains(t, f.Detail, "the agent called terminal/create, which acpcheck never offered")
	require.Len(t, f.Lines, 4)
	assert.Contains(t, rep.Wire[f.Lines[0]-1].Raw, `"method":"terminal/create"`)
	assert.Contains(t, rep.Wire[f.Lines[1]-1].Raw, `-32601`)
}

// A tool call advertised as cancellable a moment after the work was judged
// under way is still cancelled: v2-entity-cancel waits -cancel-after for
// one.
func TestLateCancellableToolCallIsCancelled(t *testing.T) {
	rep, err := runChecks(context.Background(), testOptions(t, faultV2LateTool))
	require.NoError(t, err)
	assert.Equal(t, Pass, rep.result(ruleV2Entity.ID).Status, "%+v", rep.result(ruleV2Entity.ID))
	assert.Empty(t, failed(t, rep))
}
