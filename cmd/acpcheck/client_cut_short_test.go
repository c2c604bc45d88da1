package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// owedAtTheEnd is a v1 turn the client cancels while the agent's
// permission request and terminal/create wait on it: the agent cancels both
// with $/cancel_request and answers the prompt cancelled, and the client
// answers neither request (acpx 0.1.15 at a terminal's permission prompt).
const owedAtTheEnd = `{"seq":1,"dir":"to_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}"}
{"seq":2,"dir":"from_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1}}"}
{"seq":3,"dir":"to_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/new\",\"params\":{\"cwd\":\"/\",\"mcpServers\":[]}}"}
{"seq":4,"dir":"from_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"s1\"}}"}
{"seq":5,"dir":"to_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s1\",\"prompt\":[]}}"}
{"seq":6,"dir":"from_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"terminal/create\",\"params\":{\"sessionId\":\"s1\",\"command\":\"sleep\"}}"}
{"seq":7,"dir":"from_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/request_permission\",\"params\":{\"sessionId\":\"s1\",\"toolCall\":{\"toolCallId\":\"c1\"},\"options\":[]}}"}
{"seq":8,"dir":"to_agent","raw":"{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"s1\"}}"}
{"seq":9,"dir":"from_agent","raw":"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":2}}"}
{"seq":10,"dir":"from_agent","raw":"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":1}}"}
{"seq":11,"dir":"from_agent","raw":"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"stopReason\":\"cancelled\"}}"}
`

// When the client ends the conversation in the middle of a turn owing
// answers (the permission request pending at its own session/cancel, the
// requests the agent cancelled), they were cut short, not judged: the
// client's rules are not brought about, and the report says which requests
// were left and why, never that there were none. When the agent ended it,
// or the client ended it between turns, having read the turn's end, they
// are findings.
func TestReplayOfAnswersTheClientStillOwedAtTheEnd(t *testing.T) {
	for _, c := range []struct {
		end        string
		permission Status
		cancelled  Status
	}{
		{`{"end":"the editor closed the agent's stdin","by_editor":true}`, NotBrought, NotBrought},
		{"", NotBrought, NotBrought}, // a record with no end: the proxy was killed
		{`{"end":"the agent exited"}`, NotBrought, Fail},
		// The editor's input ended before the prompt's answer (line 11): the
		// turn was running, and its requests were cut short.
		{`{"end":"the editor closed the agent's stdin","by_editor":true,"input_ended":11}`, NotBrought, NotBrought},
		// The editor read the prompt's answer and then ended the
		// conversation, with no turn running, still owing the answers to
		// the requests cancelled before: unanswered, as when the agent ends.
		{`{"end":"the editor closed the agent's stdin","by_editor":true,"input_ended":12}`, NotBrought, Fail},
	} {
		t.Run(c.end, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wire.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(owedAtTheEnd+c.end+"\n"), 0o600))
			rep := replayFile(t, path)
			permission, cancelled := rep.result(ruleClientPermission.ID), rep.result(ruleClientCancelled.ID)
			assert.Equal(t, c.permission, permission.Status)
			assert.Equal(t, c.cancelled, cancelled.Status)
			if c.cancelled == NotBrought {
				when := "at a moment the record does not place"
				if strings.Contains(c.end, "input_ended") {
					when = "in the middle of a turn"
				}
				assert.Equal(t, "the conversation ended (the client ended it, or acpcheck was stopped) "+when+", with the agent's session/request_permission (line 7), pending at the client's session/cancel (line 8), unanswered: cut short, not judged", permission.Why)
				assert.Equal(t, "the conversation ended (the client ended it, or acpcheck was stopped) "+when+", with the agent's terminal/create (line 6), which it cancelled with $/cancel_request (line 10), unanswered: cut short, not judged", cancelled.Why)
			} else {
				assert.Equal(t, "the agent's session/request_permission (line 7), pending at the client's session/cancel (line 8), was then cancelled by the agent (line 9): client-cancel-answered judges it", permission.Why)
				require.Len(t, cancelled.Findings, 2, "the terminal and the permission request, both cancelled by the agent and never answered")
				assert.Equal(t, sideClient, cancelled.Findings[0].Side)
			}
		})
	}
}
