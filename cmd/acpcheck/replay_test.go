package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeRecording writes lines to a file as the proxy records them, in the
// order given.
func writeRecording(t *testing.T, lines []Line) string {
	t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		raw, err := json.Marshal(l)
		require.NoError(t, err)
		b.Write(append(raw, '\n'))
	}
	path := filepath.Join(t.TempDir(), "wire.jsonl")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	return path
}

// statuses maps each rule of rep to its status.
func statuses(rep *Report) map[string]Status {
	out := map[string]Status{}
	for _, r := range rep.Results {
		out[r.ID] = r.Status
	}
	return out
}

// A recorded conversation read back finds what the proxy found as it
// happened, with the same lines, and passes the watched rules the
// conversation gave a chance to be broken.
func TestReplayFindsWhatTheProxyFound(t *testing.T) {
	for _, fault := range []string{"correct", faultCancelError, faultCancelTwice, faultUpdateAfterCancel, faultAnswerNote, faultAnswerUnknownID, faultCancelIgnored} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			_, _, record, v := proxyTo(t, "correct,"+fault, func(w io.WriteCloser) { chunked(w, []byte(conversation)) })
			f, err := os.Open(writeRecording(t, record))
			require.NoError(t, err)
			defer f.Close()
			rec, err := readRecording(f)
			require.NoError(t, err)
			rep := replay("wire.jsonl", rec)

			var want []violation
			v.mu.Lock()
			want = append(want, v.got...)
			v.mu.Unlock()
			var got []violation
			for _, r := range rep.Results {
				for _, f := range r.Findings {
					got = append(got, violation{Rule: r.Rule, Detail: f.Detail, Lines: f.Lines, Side: f.Side})
				}
			}
			assert.ElementsMatch(t, want, got)
			assert.Len(t, rep.Results, len(watchedRules))
			for id, s := range statuses(rep) {
				if s != Fail {
					// The conversation has requests, notifications, a
					// prompt cancelled with session/cancel, and its answer
					// but for the agent that ignores the cancel. No
					// prompt is cancelled with $/cancel_request, and no
					// request of the agent's is cancelled.
					want := Pass
					if fault == faultCancelIgnored && (id == ruleCancelStop.ID || id == ruleUpdateAfter.ID) ||
						id == ruleCancelRequest.ID || id == ruleClientPermission.ID || id == ruleClientCancelled.ID {
						want = NotBrought
					}
					assert.Equal(t, want, s, id)
				}
			}
			assert.Equal(t, len(want) > 0, rep.ExitCode() == 1)
		})
	}
}

// A record whose file order differs from its sequence (cut and joined by
// hand) is read in sequence, and a line not UTF-8 is read byte for byte.
func TestReadRecordingOrdersBySequence(t *testing.T) {
	lines := []Line{
		{Seq: 2, Dir: fromAgent, Raw: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"x","version":"1.2"}}}`},
		{Seq: 1, Dir: toAgent, Raw: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`},
		{Seq: 3, Dir: toAgent, Base64: []byte("\xff\xfe not UTF-8")},
	}
	f, err := os.Open(writeRecording(t, lines))
	require.NoError(t, err)
	defer f.Close()
	rec, err := readRecording(f)
	require.NoError(t, err)
	got := rec.lines
	require.Len(t, got, 3)
	assert.Equal(t, toAgent, got[0].Dir)
	assert.Contains(t, got[0].Raw, `"initialize"`)
	assert.Equal(t, []byte("\xff\xfe not UTF-8"), got[2].bytes())
	rep := replay("r.jsonl", rec)
	assert.Equal(t, "x 1.2", rep.AgentName)
	assert.Equal(t, NotBrought, rep.result(ruleNoteUnanswered.ID).Status)
	assert.Equal(t, whyNotWatched[ruleNoteUnanswered.ID], rep.result(ruleNoteUnanswered.ID).Why)
	assert.Equal(t, Pass, rep.result(ruleOneAnswer.ID).Status)
}

// A v2 conversation is reported on the v2 wire, its findings citing it.
func TestReplayOfV2Conversation(t *testing.T) {
	lines := []Line{
		{Seq: 1, Dir: toAgent, Raw: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}`},
		{Seq: 2, Dir: fromAgent, Raw: `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"y"}}}`},
		{Seq: 3, Dir: toAgent, Raw: `{"jsonrpc":"2.0","method":"_x/note"}`},
		{Seq: 4, Dir: fromAgent, Raw: `{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}`},
	}
	rep := replay("v2.jsonl", recording{lines: lines})
	assert.Empty(t, rep.Wire)
	assert.Len(t, rep.WireV2, 4)
	assert.Equal(t, "y", rep.AgentName)
	res := rep.result(ruleNoteUnanswered.ID)
	require.Equal(t, Fail, res.Status)
	assert.Equal(t, 2, res.Findings[0].Protocol)
	var text bytes.Buffer
	rep.WriteText(&text)
	assert.Contains(t, text.String(), "the conversation recorded in v2.jsonl, with y")
	assert.Contains(t, text.String(), `#4    agent→client {"jsonrpc":"2.0","error"`)
}

// acpcheck report prints the replay as text or JSON, writes the page, and
// exits 1 for a finding; a file that is not a recording exits 2.
func TestReportCommand(t *testing.T) {
	_, _, record, _ := proxyTo(t, "correct,"+faultAnswerNote, func(w io.WriteCloser) { chunked(w, []byte(conversation)) })
	path := writeRecording(t, record)
	page := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, mainCode(context.Background(), []string{"report", "-json", "-html", page, path}, &stdout, &stderr), stderr.String())
	var rep Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	assert.Equal(t, path, rep.Recording)
	assert.Equal(t, Fail, rep.result(ruleNoteUnanswered.ID).Status)
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(html), `data-rule="notification-unanswered"`)
	assert.NotContains(t, string(html), "http://", "the page loads nothing")
	assert.NotContains(t, string(html), "<script src")

	stdout.Reset()
	require.Equal(t, 1, mainCode(context.Background(), []string{"report", path}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "FAIL notification-unanswered")

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{\"seq\":1,\"dir\":\"to_agent\",\"raw\":\"{}\"}\nnot a record\n"), 0o600))
	for _, args := range [][]string{{"report"}, {"report", bad}, {"report", filepath.Join(t.TempDir(), "none")}, {"report", "a", "b"}} {
		stderr.Reset()
		assert.Equal(t, 2, mainCode(context.Background(), args, &stdout, &stderr), "%q", args)
		assert.NotEmpty(t, stderr.String())
	}
	assert.True(t, strings.Contains(stderr.String(), "give one recording"))
}

// codexRecording is a conversation with codex-acp 0.16.0 through the
// proxy (testdata/README.md says how it was made).
const codexRecording = "testdata/codex-acp-0.16.0.jsonl"

func replayFile(t *testing.T, path string) *Report {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rec, err := readRecording(f)
	require.NoError(t, err)
	return replay(path, rec)
}

// The recorded conversation with codex-acp, replayed: its known fault, the
// answer to the $/cancel_request notification, is the one finding, citing
// the cancel and the ID-less answer; its session/cancel is answered
// cancelled, and every other watched rule passes.
func TestReplayOfRecordedCodex(t *testing.T) {
	rep := replayFile(t, codexRecording)
	assert.Equal(t, "codex-acp 0.16.0", rep.AgentName)
	// Its answer to the notification has no id member either, which
	// JSON-RPC's answers all have; the client's side breaks nothing.
	assert.Equal(t, map[string]Status{
		ruleCancelStop.ID: Pass, ruleCancelRequest.ID: NotBrought, ruleNoteUnanswered.ID: Fail, ruleOneAnswer.ID: Pass, ruleUnknownID.ID: Pass, ruleUpdateAfter.ID: Pass,
		ruleFraming.ID: Pass, ruleEnvelope.ID: Fail, ruleErrorMessage.ID: Pass, ruleIDEcho.ID: Pass,
		ruleClientPermission.ID: NotBrought, ruleClientCancelled.ID: NotBrought,
	}, statuses(rep))
	assert.Equal(t, sideAgent, rep.result(ruleEnvelope.ID).Findings[0].Side)
	assert.Contains(t, rep.result(ruleCancelRequest.ID).Why, "only after the client's session/cancel", "codex ignores $/cancel_request of a prompt")
	findings := rep.result(ruleNoteUnanswered.ID).Findings
	require.Len(t, findings, 1)
	require.Len(t, findings[0].Lines, 2)
	note, answer := rep.Wire[findings[0].Lines[0]-1], rep.Wire[findings[0].Lines[1]-1]
	assert.Equal(t, toAgent, note.Dir)
	assert.Equal(t, "$/cancel_request", parse(note.bytes()).Method)
	assert.Equal(t, fromAgent, answer.Dir)
	p := parse(answer.bytes())
	require.NotNil(t, p.Error)
	assert.False(t, p.hasID())
	assert.EqualValues(t, -32601, p.Error.Code)
	assert.Equal(t, 1, rep.ExitCode())
}

// In v2 a prompt is answered as soon as it is taken, and its turn's
// updates follow the answer: a v2 conversation's updates after a prompt's
// answer break no rule, and a prompt's answer is no stop reason.
func TestReplayOfV2TurnFindsNothing(t *testing.T) {
	raw := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}`,
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","messageId":"m1","prompt":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"messageId":"m1"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"r1","content":{"type":"text","text":"Hi"}}}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}`,
	}
	var lines []Line
	for i, r := range raw {
		dir := toAgent
		if strings.Contains(r, `"result"`) || strings.Contains(r, `"session/update"`) {
			dir = fromAgent
		}
		lines = append(lines, Line{Seq: i + 1, Dir: dir, Raw: r})
	}
	rep := replay("v2.jsonl", recording{lines: lines})
	for _, r := range rep.Results {
		assert.NotEqual(t, Fail, r.Status, "%s: %+v", r.ID, r.Findings)
	}
	assert.Equal(t, NotBrought, rep.result(ruleCancelStop.ID).Status)
	assert.Contains(t, rep.result(ruleCancelStop.ID).Why, "v1's")
	assert.Equal(t, Pass, rep.result(ruleUpdateAfter.ID).Status, "the work's idle state_update ends it")

	// After its idle, the work is over: one more chunk is a finding.
	late := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"r1","content":{"type":"text","text":"more"}}}}`
	lines = append(lines, Line{Seq: len(lines) + 1, Dir: fromAgent, Raw: late})
	rep = replay("v2.jsonl", recording{lines: lines})
	res := rep.result(ruleUpdateAfter.ID)
	require.Equal(t, Fail, res.Status)
	assert.Equal(t, []int{7, 8}, res.Findings[0].Lines)
}

// A record cut in the middle of its last line (a proxy killed as it wrote)
// is reported on its whole lines, the report saying the rest was cut; an
// empty record, or one damaged before its last line, is refused.
func TestReportOnDamagedRecording(t *testing.T) {
	whole := `{"seq":1,"dir":"to_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}"}
{"seq":2,"dir":"from_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":1}}"}
`
	cut := `{"seq":3,"dir":"to_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":2,\"meth`
	for _, c := range []struct {
		name, record string
		code         int
		says         string // on stderr
		report       string // on stdout
	}{
		{name: "cut mid-line", record: whole + cut, code: 0, says: "cut in the middle of its last line", report: "cut in the middle of its last line (" + fmt.Sprint(len(cut))},
		{name: "whole", record: whole, code: 0},
		{name: "empty", record: "", code: 2, says: "holds no message"},
		{name: "only a cut line", record: cut, code: 2, says: "holds no message"},
		{name: "damaged before its end", record: cut + "\n" + whole, code: 2, says: "line 1 of the recording is not a recorded message"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wire.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(c.record), 0o600))
			var stdout, stderr bytes.Buffer
			require.Equal(t, c.code, reportCommand([]string{path}, &stdout, &stderr), stderr.String())
			if c.says != "" {
				assert.Contains(t, stderr.String(), c.says)
			} else {
				assert.Empty(t, stderr.String())
			}
			assert.Contains(t, stdout.String(), c.report)
		})
	}
}
