package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/acpv2"
	"github.com/acpkit/acprpc/examples/internal/demo"
)

// The agent in ACP v2, on the wire: the client asks for protocol version 2
// and gets the same scenario in v2's form.

// update decodes a v2 session/update's update.
func (m msg) update() acpv2.SessionUpdateVariant {
	var n acpv2.UpdateSessionNotification
	_ = json.Unmarshal(m.Params, &n)
	return n.Update.Value
}

// idle returns the update as v2's idle state_update, which ends the work.
func (m msg) idle() (acpv2.IdleStateUpdate, bool) {
	state, _ := m.update().(acpv2.StateUpdate)
	idle, ok := state.Value.(acpv2.IdleStateUpdate)
	return idle, ok && m.Method == acpv2.MethodSessionUpdate
}

func (m msg) isIdle() bool {
	_, ok := m.idle()
	return ok
}

// handshakeV2 runs a v2 initialize and session/new and returns the session
// ID.
func (p *peer) handshakeV2() string {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"test","version":"1"},"capabilities":{}}}`)
	init := p.next()
	require.True(p.t, init.isResponseTo("1"), init.Raw)
	var res acpv2.InitializeResponse
	require.NoError(p.t, json.Unmarshal(init.Result, &res))
	assert.Equal(p.t, acpv2.ProtocolVersion(demo.ProtocolV2), res.ProtocolVersion)
	assert.Equal(p.t, demo.AgentName, res.Info.Name)
	assert.JSONEq(p.t, `{"session":{}}`, string(mustMember(p.t, init.Result, "capabilities")))

	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/"}}`)
	sess := p.next()
	require.True(p.t, sess.isResponseTo("2"), sess.Raw)
	var s acpv2.NewSessionResponse
	require.NoError(p.t, json.Unmarshal(sess.Result, &s))
	return string(s.SessionID)
}

func mustMember(t *testing.T, obj json.RawMessage, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m))
	return m[name]
}

// promptV2 sends a v2 prompt and reads the turn's start: the prompt's answer
// with its messageId, state_update running, the echoed prompt, the first
// agent_message_chunk, a slow prompt's cancellable tool call, and the two
// requests, whose IDs it returns. The answer comes before any request is
// answered: the prompt is answered once inserted.
func (p *peer) promptV2(id, sessionID, text string) (messageID, permID, termID string) {
	p.t.Helper()
	p.sendf(`{"jsonrpc":"2.0","id":%s,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, id, sessionID, text)
	var updates []acpv2.SessionUpdateVariant
	for messageID == "" || permID == "" || termID == "" {
		m := p.next()
		switch {
		case m.isResponseTo(id):
			var r acpv2.PromptResponse
			require.NoError(p.t, json.Unmarshal(m.Result, &r), m.Raw)
			require.NotEmpty(p.t, r.MessageID, m.Raw)
			messageID = string(r.MessageID)
		case m.Method == acpv2.MethodSessionUpdate:
			updates = append(updates, m.update())
		case m.Method == acpv2.MethodSessionRequestPermission:
			permID = string(m.ID)
			assert.JSONEq(p.t, fmt.Sprintf("%q", sessionID), m.param("sessionId"))
			assert.NotEmpty(p.t, m.param("title"), "a v2 permission request has a title")
			assert.Contains(p.t, m.param("subject"), `"type":"tool_call"`)
			assert.Contains(p.t, m.param("subject"), `"toolCallId":"call_1"`)
		case m.Method == acpv1.MethodTerminalCreate:
			termID = string(m.ID)
			assert.Equal(p.t, `"sleep"`, m.param("command"))
		default:
			require.FailNow(p.t, "unexpected line", m.Raw)
		}
	}
	if !strings.Contains(text, "slow") {
		require.Len(p.t, updates, 3, "running, the echoed prompt, the first chunk")
	} else {
		require.Len(p.t, updates, 4, "running, the echoed prompt, the first chunk, the tool call")
		tool, ok := updates[3].(acpv2.ToolCallUpdate)
		require.True(p.t, ok, "want the tool call: %#v", updates[3])
		assert.Equal(p.t, acpv2.ToolCallID("call_1"), tool.ToolCallID)
		assert.Equal(p.t, acpv2.ToolCallStatusPending, tool.Status)
		require.NotNil(p.t, tool.Capabilities, "a slow turn's tool call can be cancelled")
		assert.NotNil(p.t, tool.Capabilities.Cancel, "a slow turn's tool call can be cancelled")
	}
	assert.Equal(p.t, acpv2.StateUpdate{Value: acpv2.RunningStateUpdate{}}, updates[0])
	echo, ok := updates[1].(acpv2.UserMessageChunk)
	require.True(p.t, ok, "want the echoed prompt: %#v", updates[1])
	assert.Equal(p.t, acpv2.MessageID(messageID), echo.MessageID, "the echo carries the prompt's messageId")
	assert.Equal(p.t, acpv2.ContentBlock{Value: acpv2.TextContent{Text: text}}, echo.Content)
	chunk, ok := updates[2].(acpv2.AgentMessageChunk)
	require.True(p.t, ok, "want the first agent_message_chunk: %#v", updates[2])
	assert.NotEmpty(p.t, chunk.MessageID, "v2 chunks carry their message's ID")
	return messageID, permID, termID
}

// expectIdleEnd reads the end of a v2 turn: updates, then the one idle
// state_update with stopReason.
func (p *peer) expectIdleEnd(stopReason string) (before []msg) {
	p.t.Helper()
	for {
		m := p.next()
		require.Equal(p.t, acpv2.MethodSessionUpdate, m.Method, "only updates until the work ends: %s", m.Raw)
		if m.isIdle() {
			idle, _ := m.idle()
			assert.Equal(p.t, acpv2.StopReason(stopReason), idle.StopReason, m.Raw)
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
	p.expectToolCallEnd(permID, termID, "cancelled", "Stopped (session/cancel)")

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

// expectToolCallEnd reads the end of a slow v2 turn once its tool call's
// two requests are cancelled: the agent's cancels, answered as a client
// does; the tool call's final update, reporting it cancelled and no longer
// cancellable; a last chunk saying why; and the idle state_update with
// stopReason.
func (p *peer) expectToolCallEnd(permID, termID, stopReason, why string) {
	p.t.Helper()
	p.expectCancels(permID, termID)
	p.answerCancelled(permID, termID)
	p.expectToolCallDone(stopReason, why)
}

// expectToolCallDone reads the rest of expectToolCallEnd, from the tool
// call's final update on.
func (p *peer) expectToolCallDone(stopReason, why string) {
	p.t.Helper()
	before := p.expectIdleEnd(stopReason)
	require.Len(p.t, before, 2, "the tool call's final update and a last chunk")
	tool, ok := before[0].update().(acpv2.ToolCallUpdate)
	require.True(p.t, ok, "want the tool call's final update: %s", before[0].Raw)
	assert.Equal(p.t, acpv2.ToolCallStatusCancelled, tool.Status, before[0].Raw)
	require.NotNil(p.t, tool.Capabilities, before[0].Raw)
	assert.Nil(p.t, tool.Capabilities.Cancel, "a final tool call is no longer cancellable: %s", before[0].Raw)
	assert.Contains(p.t, before[1].updateText(), why)
}

// tool_call/cancel of a slow turn's tool call is accepted at once, cancels
// the requests the tool call waits on, makes the tool call final, and the
// work ends with end_turn: the session was not cancelled. A second cancel
// of the now final tool call, and one of a tool call never advertised, are
// refused -32602.
func TestV2ToolCallCancel(t *testing.T) {
	p := startAgent(t)
	sid := p.handshakeV2()
	_, permID, termID := p.promptV2("3", sid, "slow: analyze file X")

	p.sendf(`{"jsonrpc":"2.0","id":4,"method":"tool_call/cancel","params":{"sessionId":%q,"toolCallId":"call_1"}}`, sid)
	// The acceptance and the cancels it sets off come in either order.
	var accepted msg
	var cancels []string
	for accepted.ID == nil || len(cancels) < 2 {
		m := p.next()
		switch {
		case m.isResponseTo("4"):
			require.Nil(t, accepted.ID, "a second answer: %s", m.Raw)
			accepted = m
		case m.Method == "$/cancel_request":
			cancels = append(cancels, m.param("requestId"))
		default:
			require.FailNow(t, "unexpected line", m.Raw)
		}
	}
	assert.JSONEq(t, `{}`, string(accepted.Result), "accepted, before the work stops")
	assert.ElementsMatch(t, []string{permID, termID}, cancels, "one $/cancel_request per request the tool call waits on")
	p.answerCancelled(permID, termID)
	p.expectToolCallDone("end_turn", "The tool call was cancelled")

	for id, toolCallID := range map[string]string{"5": "call_1", "6": "call_9"} {
		p.sendf(`{"jsonrpc":"2.0","id":%s,"method":"tool_call/cancel","params":{"sessionId":%q,"toolCallId":%q}}`, id, sid, toolCallID)
		refused := p.next()
		require.True(t, refused.isResponseTo(id), refused.Raw)
		require.NotNil(t, refused.Error, refused.Raw)
		assert.EqualValues(t, -32602, refused.Error.Code, "%s is final or unknown: %s", toolCallID, refused.Raw)
	}
	assert.Empty(t, p.closeStdin())
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
			idle, _ := m.idle()
			assert.Equal(t, acpv2.StopReasonCancelled, idle.StopReason)
		default:
			require.Equal(t, acpv2.MethodSessionUpdate, m.Method, m.Raw)
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
	p.expectToolCallEnd(permID, termID, "cancelled", "Stopped (session/cancel)")
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
