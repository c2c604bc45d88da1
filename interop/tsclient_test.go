package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clientReport is what src/client.ts reports (the members the tests read).
type clientReport struct {
	Role      string          `json:"role"`
	SDK       string          `json:"sdk"`
	Scenario  string          `json:"scenario"`
	Rounds    []clientRound   `json:"rounds"`
	Checks    map[string]bool `json:"checks"`
	Pass      bool            `json:"pass"`
	Error     *rpcError       `json:"error"`
	AgentExit *struct {
		Code   *int    `json:"code"`
		Signal *string `json:"signal"`
	} `json:"agentExit"`
	OtherRequests []struct {
		Method string `json:"method"`
	} `json:"otherRequests"`
	Wire wireLog `json:"wire"`
}

type clientRound struct {
	Label              string          `json:"label"`
	SessionID          string          `json:"sessionId"`
	PromptRequestID    json.RawMessage `json:"promptRequestId"`
	Permission         *handlerRecord  `json:"permission"`
	Terminal           *handlerRecord  `json:"terminal"`
	Outcome            string          `json:"outcome"`
	Result             json.RawMessage `json:"result"`
	Error              *rpcError       `json:"error"`
	Updates            []updateRecord  `json:"updates"`
	ActiveSessionQueue []string        `json:"activeSessionQueue"`
}

// handlerRecord is what the TS client's permission or terminal handler saw.
type handlerRecord struct {
	RequestID       json.RawMessage `json:"requestId"`
	SignalAbortedAt *float64        `json:"signalAbortedAt"`
	SignalReason    *rpcError       `json:"signalReason"`
	Answer          *string         `json:"answer"`
	Result          json.RawMessage `json:"result"`
	Error           *rpcError       `json:"error"`
}

type updateRecord struct {
	SessionUpdate                string `json:"sessionUpdate"`
	DeliveredBeforePromptSettled bool   `json:"deliveredBeforePromptSettled"`
}

// runTSClient runs src/client.ts's scenario against a Go agent and returns
// its report. If the test fails, the report, the wire log and both
// processes' stderr are printed.
func runTSClient(t *testing.T, scenario string, agent goAgent) *clientReport {
	t.Helper()
	node := requireNode(t)
	reportPath := filepath.Join(t.TempDir(), "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, nodeScript("client.ts",
		append([]string{"--scenario", scenario, "--timeout", "15000", "--report", reportPath, "--"}, agent.command()...)...)...)
	cmd.Dir = interopDir
	cmd.Env = append(os.Environ(), agent.env...) // client.ts passes its environment to the agent
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr // the agent's stderr is passed through to client.ts's
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()

	raw, _ := os.ReadFile(reportPath)
	var report clientReport
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client.ts --scenario %s: exit %v\nreport:\n  %s\nwire (in = read from the Go agent):\n%s\nstderr (client.ts and the Go agent):\n%s",
				scenario, runErr, withoutWire(raw), report.Wire, stderr.String())
		}
	})
	require.NoError(t, runErr, "client.ts must exit 0 whenever its scenario ran")
	require.NoError(t, readReport(reportPath, &report), "client.ts report")
	assert.Equal(t, "@agentclientprotocol/sdk@"+sdkVersion, report.SDK)
	assert.Nil(t, report.Error, "client.ts hit an error")
	if assert.NotNil(t, report.AgentExit) && assert.NotNil(t, report.AgentExit.Code, "the agent was killed") {
		assert.Equal(t, 0, *report.AgentExit.Code, "the Go agent's exit status (a race report makes it 66)")
	}
	var failing []string
	for name, ok := range report.Checks {
		if !ok {
			failing = append(failing, name)
		}
	}
	sort.Strings(failing)
	assert.True(t, report.Pass, "client.ts checks failed: %v", failing)
	assert.Empty(t, report.OtherRequests, "the agent sent requests the client does not serve")
	checkTypes(t, 1, "client.ts "+scenario, report.Wire)
	return &report
}

// assertUpdatesBeforeResult checks the ordering ACP requires: every
// session/update of the round's session was read before the prompt's
// response, and handed to the SDK app before the prompt's promise settled.
func assertUpdatesBeforeResult(t *testing.T, r *clientReport, round clientRound) {
	t.Helper()
	responses := r.Wire.responses("in", string(round.PromptRequestID))
	require.Len(t, responses, 1, "the agent answers session/prompt %s exactly once", round.PromptRequestID)
	answeredAt := responses[0].Seq
	updates := 0
	for _, e := range r.Wire.notifications("in", "session/update") {
		if e.parsed().sessionOf() != round.SessionID {
			continue
		}
		updates++
		assert.Less(t, e.Seq, answeredAt, "session/update #%d came after the prompt's response #%d", e.Seq, answeredAt)
	}
	assert.Positive(t, updates, "no session/update for %s", round.SessionID)
	assert.Len(t, round.Updates, updates, "the SDK app saw every update on the wire")
	for i, u := range round.Updates {
		assert.True(t, u.DeliveredBeforePromptSettled, "update %d (%s) delivered after the prompt settled", i, u.SessionUpdate)
	}
}

// The TS client prompts and answers both of the agent's requests: the turn
// ends with end_turn, and no cancellation goes either way.
func TestTSClientNormal(t *testing.T) {
	t.Parallel()
	forEachGoAgent(t, func(t *testing.T, agent goAgent) {
		r := runTSClient(t, "normal", agent)
		require.Len(t, r.Rounds, 1)
		round := r.Rounds[0]
		assert.Equal(t, "resolved", round.Outcome)
		assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(round.Result))
		require.NotNil(t, round.Permission, "the agent asked no permission")
		require.NotNil(t, round.Terminal, "the agent created no terminal")
		for _, h := range []*handlerRecord{round.Permission, round.Terminal} {
			assert.Nil(t, h.SignalAbortedAt, "request %s was cancelled", h.RequestID)
			assert.Len(t, r.Wire.responses("out", string(h.RequestID)), 1, "the client answers request %s once", h.RequestID)
		}
		assert.Empty(t, r.Wire.cancels("in"), "the agent sent $/cancel_request")
		assert.Empty(t, r.Wire.cancels("out"), "the client sent $/cancel_request")
		assertUpdatesBeforeResult(t, r, round)
		assert.Equal(t, "stop", round.ActiveSessionQueue[len(round.ActiveSessionQueue)-1])
	})
}

// session/cancel while the agent's permission and terminal requests are
// pending: the agent cancels each with a $/cancel_request naming that
// request's own ID, which aborts the TS handlers' signals; the permission is
// answered with the cancelled outcome, the terminal with -32800, and the
// prompt returns stopReason cancelled once, after every update.
func TestTSClientSessionCancel(t *testing.T) {
	t.Parallel()
	forEachGoAgent(t, func(t *testing.T, agent goAgent) {
		r := runTSClient(t, "session-cancel", agent)
		require.Len(t, r.Rounds, 1)
		round := r.Rounds[0]
		require.NotNil(t, round.Permission, "the agent asked no permission")
		require.NotNil(t, round.Terminal, "the agent created no terminal")
		perm, term := round.Permission, round.Terminal
		require.NotEqual(t, string(perm.RequestID), string(term.RequestID))

		// Each handler's signal fired through $/cancel_request with its own ID.
		for name, h := range map[string]*handlerRecord{"permission": perm, "terminal": term} {
			require.NotNil(t, h.SignalAbortedAt, "the %s handler's signal never fired", name)
			require.NotNil(t, h.SignalReason, name)
			assert.Equal(t, int64(-32800), h.SignalReason.Code, "%s signal reason", name)
			assert.JSONEq(t, `{"requestId":`+string(h.RequestID)+`}`, string(h.SignalReason.Data), "%s signal reason names its request", name)
		}
		got := r.Wire.cancels("in")
		slices.Sort(got)
		want := []string{string(perm.RequestID), string(term.RequestID)}
		slices.Sort(want)
		assert.Equal(t, want, got, "the agent's $/cancel_request IDs: one per pending request, each its own")
		assert.Empty(t, r.Wire.cancels("out"), "the client sent $/cancel_request")
		assert.Len(t, r.Wire.notifications("out", "session/cancel"), 1)

		// The client's answers: cancelled outcome and -32800, once each.
		permAnswers := r.Wire.responses("out", string(perm.RequestID))
		if assert.Len(t, permAnswers, 1) {
			assert.JSONEq(t, `{"outcome":{"outcome":"cancelled"}}`, string(permAnswers[0].parsed().Result))
		}
		termAnswers := r.Wire.responses("out", string(term.RequestID))
		if assert.Len(t, termAnswers, 1) && assert.NotNil(t, termAnswers[0].parsed().Error) {
			assert.Equal(t, int64(-32800), termAnswers[0].parsed().Error.Code)
		}

		// The prompt: stopReason cancelled, exactly once, after every update.
		assert.Equal(t, "resolved", round.Outcome)
		assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(round.Result))
		assertUpdatesBeforeResult(t, r, round)
		prompt := r.Wire.responses("in", string(round.PromptRequestID))[0].parsed()
		assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(prompt.Result), "the agent answers a cancelled turn with a result, never an error")
		assert.Equal(t, "stop", round.ActiveSessionQueue[len(round.ActiveSessionQueue)-1])
	})
}

// The prompt cancelled with the SDK's cancellationSignal, which sends
// $/cancel_request for it. Graceful (stopWaitingOnCancel false): the promise
// resolves with the agent's stopReason cancelled. Stop-waiting: it rejects
// with -32800 at once, and the agent still answers exactly once on the wire.
func TestTSClientRequestCancel(t *testing.T) {
	t.Parallel()
	forEachGoAgent(t, func(t *testing.T, agent goAgent) {
		r := runTSClient(t, "request-cancel", agent)
		require.Len(t, r.Rounds, 2)
		graceful, stopWaiting := r.Rounds[0], r.Rounds[1]
		require.Equal(t, "graceful", graceful.Label)
		require.Equal(t, "stop-waiting", stopWaiting.Label)

		for _, round := range []clientRound{graceful, stopWaiting} {
			id := string(round.PromptRequestID)
			require.NotEmpty(t, id, "%s: no session/prompt on the wire", round.Label)
			assert.Equal(t, 1, count(r.Wire.cancels("out"), id), "%s: $/cancel_request for the prompt %s", round.Label, id)
			answers := r.Wire.responses("in", id)
			if assert.Len(t, answers, 1, "%s: the Go agent answers the prompt exactly once", round.Label) {
				assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(answers[0].parsed().Result), "%s: the agent's answer on the wire", round.Label)
			}
		}
		assert.Empty(t, r.Wire.cancels("in"), "the agent cancelled requests that were already answered")

		assert.Equal(t, "resolved", graceful.Outcome)
		assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(graceful.Result))
		assertUpdatesBeforeResult(t, r, graceful)

		assert.Equal(t, "rejected", stopWaiting.Outcome)
		if assert.NotNil(t, stopWaiting.Error) {
			assert.Equal(t, int64(-32800), stopWaiting.Error.Code)
		}
		assert.Equal(t, "error:-32800", stopWaiting.ActiveSessionQueue[len(stopWaiting.ActiveSessionQueue)-1])
	})
}

// forEachGoAgent runs f against each of goAgents, in parallel.
func forEachGoAgent(t *testing.T, f func(t *testing.T, agent goAgent)) {
	for _, agent := range goAgents {
		t.Run(agent.name, func(t *testing.T) {
			t.Parallel()
			f(t, agent)
		})
	}
}

func count(ids []string, id string) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}
