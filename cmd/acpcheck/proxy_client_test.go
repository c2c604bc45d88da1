package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// editorStep is what a scripted editor writes once the agent's output holds
// a line with after ("" for at once).
type editorStep struct {
	after string
	write string
}

// The editor's side of a v1 turn cancelled while the agent waits on its
// permission request and its terminal/create: the correct client answers the
// permission cancelled on its own session/cancel, and the terminal -32800
// once the agent cancelled it.
const (
	editorOpen = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"terminal":true}}}
{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}
{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"slow"}]}}`
	editorCancel         = `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`
	permissionCancelled  = `{"jsonrpc":"2.0","id":"perm3","result":{"outcome":{"outcome":"cancelled"}}}`
	permissionGranted    = `{"jsonrpc":"2.0","id":"perm3","result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`
	terminalCancelled    = `{"jsonrpc":"2.0","id":"term3","error":{"code":-32800,"message":"Request cancelled"}}`
	terminalFailed       = `{"jsonrpc":"2.0","id":"term3","error":{"code":-32603,"message":"Internal error"}}`
	answerToNotification = `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`
	answerToUnknownID    = `{"jsonrpc":"2.0","id":"term99","result":{}}`
)

// editorScript is the correct editor's steps, with the answers given.
func editorScript(permission, terminal string, extra ...string) []editorStep {
	steps := []editorStep{
		{"", editorOpen},
		{`"method":"terminal/create"`, editorCancel + "\n" + permission},
		{`"method":"$/cancel_request"`, strings.Join(append([]string{terminal}, extra...), "\n")},
	}
	return steps
}

// proxyEditor runs the proxy between a scripted editor and the test agent
// that asks for permission, and returns the violations it reported.
func proxyEditor(t *testing.T, steps []editorStep) *violations {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	v := &violations{}
	done := make(chan error, 1)
	go func() {
		_, err := runProxy(context.Background(), proxyOptions{Argv: []string{os.Args[0]}, Env: []string{agentEnv + "=correct," + askPermission}}, inR, outW, io.Discard, v.add)
		outW.Close()
		done <- err
	}()
	out := readLines(outR)
	for _, s := range steps {
		if s.after != "" {
			awaitLine(t, out, s.after, time.Minute)
		}
		_, err := io.WriteString(inW, s.write+"\n")
		require.NoError(t, err)
	}
	awaitLine(t, out, `"stopReason"`, time.Minute)
	require.NoError(t, inW.Close())
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	require.NoError(t, <-done)
	inR.Close()
	return v
}

// The proxy judges the editor too: a correct one breaks nothing, and each
// editor made to break one client rule is caught, the finding blaming the
// client.
func TestProxyJudgesTheClient(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []editorStep
		rules []string
	}{
		{"correct", editorScript(permissionCancelled, terminalCancelled), nil},
		{"permission granted after its own cancel", editorScript(permissionGranted, terminalCancelled), []string{ruleClientPermission.ID}},
		{"cancelled terminal answered with another error", editorScript(permissionCancelled, terminalFailed), []string{ruleClientCancelled.ID}},
		{"cancelled terminal answered twice", editorScript(permissionCancelled, terminalCancelled, terminalCancelled), []string{ruleOneAnswer.ID}},
		{"a notification answered", editorScript(permissionCancelled, terminalCancelled, answerToNotification), []string{ruleNoteUnanswered.ID}},
		{"an unknown ID answered", editorScript(permissionCancelled, terminalCancelled, answerToUnknownID), []string{ruleUnknownID.ID}},
		{"a log line written to the agent", editorScript(permissionCancelled, terminalCancelled, "editor: cancelled"), []string{ruleFraming.ID}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := proxyEditor(t, c.steps)
			assert.ElementsMatch(t, c.rules, v.sideRules(sideClient))
			assert.Empty(t, v.sideRules(sideAgent), "the agent broke nothing")
		})
	}
}
