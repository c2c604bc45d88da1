package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/examples/internal/demo"
)

// The agent in ACP v2, on the wire: the client asks for protocol version 2
// and gets the same scenario in v2's form.

// update decodes a session/update's update.
func (m msg) update() demo.SessionUpdate {
	var n demo.SessionNotification
	_ = json.Unmarshal(m.Params, &n)
	return n.Update
}

func (m msg) isIdle() bool { return m.Method == demo.MethodSessionUpdate && m.update().IsIdle() }

// handshakeV2 runs a v2 initialize and session/new and returns the session
// ID.
func (p *peer) handshakeV2() string {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"test","version":"1"},"capabilities":{}}}`)
	init := p.next()
	require.True(p.t, init.isResponseTo("1"), init.Raw)
	var res demo.InitializeResponseV2
	require.NoError(p.t, json.Unmarshal(init.Result, &res))
	assert.Equal(p.t, demo.ProtocolV2, res.ProtocolVersion)
	assert.Equal(p.t, demo.AgentName, res.Info.Name)
	assert.JSONEq(p.t, `{"session":{}}`, string(mustMember(p.t, init.Result, "capabilities")))

	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/"}}`)
	sess := p.next()
	require.True(p.t, sess.isResponseTo("2"), sess.Raw)
	var s demo.NewSessionResponse
	require.NoError(p.t, json.Unmarshal(sess.Result, &s))
	return s.SessionID
}

func mustMember(t *testing.T, obj json.RawMessage, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m))
	return m[name]
}

// promptV2 sends a v2 prompt and reads the turn's start: the prompt's answer
// with its messageId, state_update running, the echoed prompt, the first
// agent_message_chunk, and the two requests, whose IDs it returns. The
// answer comes before any request is answered: the prompt is answered once
// inserted.
func (p *peer) promptV2(id, sessionID, text string) (messageID, permID, termID string) {
	p.t.Helper()
	p.sendf(`{"jsonrpc":"2.0","id":%s,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, id, sessionID, text)
	var updates []demo.SessionUpdate
	for messageID == "" || permID == "" || termID == "" {
		m := p.next()
		switch {
		case m.isResponseTo(id):
			var r demo.PromptResponseV2
			require.NoError(p.t, json.Unmarshal(m.Result, &r), m.Raw)
			require.NotEmpty(p.t, r.MessageID, m.Raw)
			messageID = r.MessageID
		case m.Method == demo.MethodSessionUpdate:
			updates = append(updates, m.update())
		case m.Method == demo.MethodRequestPermission:
			permID = string(m.ID)
			assert.JSONEq(p.t, fmt.Sprintf("%q", sessionID), m.param("sessionId"))
			assert.NotEmpty(p.t, m.param("title"), "a v2 permission request has a title")
			assert.Contains(p.t, m.param("subject"), `"type":"tool_call"`)
			assert.Contains(p.t, m.param("subject"), `"toolCallId":"call_1"`)
		case m.Method == demo.MethodTerminalCreate:
			termID = string(m.ID)
			assert.Equal(p.t, `"sleep"`, m.param("command"))
		default:
			require.FailNow(p.t, "unexpected line", m.Raw)
		}
	}
	require.Len(p.t, updates, 3, "running, the echoed prompt, the first chunk")
	assert.Equal(p.t, demo.SessionUpdate{SessionUpdate: "state_update", State: "running"}, updates[0])
	assert.Equal(p.t, "user_message_chunk", updates[1].SessionUpdate)
	assert.Equal(p.t, messageID, updates[1].MessageID, "the echo carries the prompt's messageId")
	assert.Equal(p.t, text, updates[1].Content.Text)
	assert.Equal(p.t, "agent_message_chunk", updates[2].SessionUpdate)
	assert.NotEmpty(p.t, updates[2].MessageID, "v2 chunks carry their message's ID")
	return messageID, permID, termID
}

// expectIdleEnd reads the end of a v2 turn: updates, then the one idle
// state_update with stopReason.
func (p *peer) expectIdleEnd(stopReason string) (before []msg) {
	p.t.Helper()
	for {
		m := p.next()
		require.Equal(p.t, demo.MethodSessionUpdate, m.Method, "only updates until the work ends: %s", m.Raw)
		if m.isIdle() {
			assert.Equal(p.t, stopReason, m.update().StopReason, m.Raw)
			return before
		}
		before = append(before, m)
	}
}

func (p *peer) countIdles() int {
	n := 0
	for _, m := range p.seen {
		if m.isIdle() {
			n++
		}
	}
	return n
}

func TestV2CascadeBySessionCancel(t *testing.T) {
	p := startAgent(t)
	sid := p.handshakeV2()
	_, permID, termID := p.promptV2("3", sid, "slow: analyze file X")

	p.sendf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
	p.expectCancels(permID, termID)
	p.answerCancelled(permID, termID)
	before := p.expectIdleEnd("cancelled")
	require.Len(t, before, 1)
	assert.Contains(t, before[0].updateText(), "Stopped (session/cancel)")

	assert.Empty(t, p.closeStdin(), "nothing after the idle state_update")
	assert.Equal(t, 1, p.countIdles())
	p.assertAnsweredOnce("3")
}

func TestV2EndTurn(t *testing.T) {
	p := startAgent(t)
	sid := p.handshakeV2()
	_, permID, termID := p.promptV2("3", sid, "hello")
	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, permID)
	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"terminalId":"term_1"}}`, termID)
	before := p.expectIdleEnd("end_turn")
	require.Len(t, before, 1)
	assert.Contains(t, before[0].updateText(), "Done.")
	for _, m := range p.closeStdin() {
		assert.NotEqual(t, "$/cancel_request", m.Method, m.Raw)
	}
	assert.Equal(t, 1, p.countIdles())
}

// A prompt sent while the session works is held: withdrawn by
// $/cancel_request it is answered -32800, and another held one is answered
// -32800 by session/cancel, which ends the running work once.
func TestV2HeldPrompts(t *testing.T) {
	p := startAgent(t)
	sid := p.handshakeV2()
	_, permID, termID := p.promptV2("3", sid, "slow: analyze file X")
	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, permID)
	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"terminalId":"term_1"}}`, termID)
	assert.Contains(t, p.next().updateText(), "This will take a while")

	p.sendf(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"and then"}]}}`, sid)
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":4}}`)
	withdrawn := p.next()
	require.True(t, withdrawn.isResponseTo("4"), withdrawn.Raw)
	require.NotNil(t, withdrawn.Error, withdrawn.Raw)
	assert.EqualValues(t, -32800, withdrawn.Error.Code)

	p.sendf(`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"and this"}]}}`, sid)
	p.sendf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
	var held msg
	idle := 0
	for held.ID == nil || idle == 0 {
		m := p.next()
		switch {
		case m.isResponseTo("5"):
			held = m
		case m.isIdle():
			idle++
			assert.Equal(t, "cancelled", m.update().StopReason)
		default:
			require.Equal(t, demo.MethodSessionUpdate, m.Method, m.Raw)
		}
	}
	require.NotNil(t, held.Error, held.Raw)
	assert.EqualValues(t, -32800, held.Error.Code, "a held prompt is never inserted once its session is cancelled")
	assert.Empty(t, p.closeStdin())
	assert.Equal(t, 1, p.countIdles())
}

// session/close cancels the work, and its answer comes after the idle
// state_update.
func TestV2SessionClose(t *testing.T) {
	p := startAgent(t)
	sid := p.handshakeV2()
	_, permID, termID := p.promptV2("3", sid, "slow")
	p.sendf(`{"jsonrpc":"2.0","id":4,"method":"session/close","params":{"sessionId":%q}}`, sid)
	p.expectCancels(permID, termID)
	p.answerCancelled(permID, termID)
	p.expectIdleEnd("cancelled")
	closed := p.next()
	require.True(t, closed.isResponseTo("4"), closed.Raw)
	assert.JSONEq(t, `{}`, string(closed.Result))
	p.closeStdin()
}

// One connection, one version: a client asking for a version below 1 gets
// -32022 with the versions the agent has; one asking for 1 gets v1.
func TestVersionNegotiation(t *testing.T) {
	p := startAgent(t)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":0}}`)
	m := p.next()
	require.True(t, m.isResponseTo("1"), m.Raw)
	require.NotNil(t, m.Error, m.Raw)
	assert.EqualValues(t, -32022, m.Error.Code)
	assert.True(t, strings.Contains(m.Raw, `"data":{"requested":0,"supported":[1,2]}`), m.Raw)
	sid := p.handshake() // v1, as it always was
	permID, termID := p.prompt("3", sid, "slow")
	p.sendf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
	p.expectCancels(permID, termID)
	p.answerCancelled(permID, termID)
	p.expectCancelledTurn("3")
	p.closeStdin()
}
