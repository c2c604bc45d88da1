package main

import "text/template"

// This file writes text.go: constructors and readers for text, the content
// most messages carry, so that a prompt, a reply and their reading are one
// call each instead of a union's composite literal or type switch. v1 and
// v2 differ only in v2's message IDs and the name of session/update's
// params.

// textFile is text.go's source after its header.
func textFile(m *model, pkg string) (string, error) { return execute(textTemplate, textData(m, pkg)) }

// textTestFile is text_test.go's source after its header.
func textTestFile(m *model, pkg string) (string, error) {
	return execute(textTestTemplate, textData(m, pkg))
}

// textData is what the text templates read: the package, its version and
// the name of session/update's params.
func textData(m *model, pkg string) map[string]any {
	notification := "SessionNotification"
	if m.version >= 2 {
		notification = "UpdateSessionNotification"
	}
	return map[string]any{"Pkg": pkg, "Version": m.version, "Notification": notification}
}

var textTemplate = template.Must(template.New("text").Parse(`package {{.Pkg}}

import "strings"

// Text is a text content block: ContentBlock{Value: TextContent{Text: text}}.
func Text(text string) ContentBlock {
	return ContentBlock{Value: TextContent{Text: text}}
}

// TextOf is the text of blocks, such as a prompt: the text of each text
// block, in order and joined with nothing between; other blocks are
// skipped.
func TextOf(blocks []ContentBlock) string {
	var b strings.Builder
	for _, block := range blocks {
		if t, ok := block.Value.(TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// TextPrompt is a prompt of one text block for the session.
func TextPrompt(session SessionID, text string) PromptRequest {
	return PromptRequest{SessionID: session, Prompt: []ContentBlock{Text(text)}}
}

// AgentText is the session/update of a chunk of the agent's message, made of
// text, for the session{{if ge .Version 2}} and the message it is part of{{end}}.
func AgentText(session SessionID, {{if ge .Version 2}}message MessageID, {{end}}text string) {{.Notification}} {
	chunk := AgentMessageChunk{ {{- if ge .Version 2}}MessageID: message, {{end}}Content: Text(text)}
	return {{.Notification}}{SessionID: session, Update: SessionUpdate{Value: chunk}}
}

// AgentTextOf is the text of an update that is a chunk of the agent's
// message made of text, and whether it is one.
func AgentTextOf(update SessionUpdate) (string, bool) {
	chunk, ok := update.Value.(AgentMessageChunk)
	if !ok {
		return "", false
	}
	t, ok := chunk.Content.Value.(TextContent)
	return t.Text, ok
}
`))

var textTestTemplate = template.Must(template.New("text_test").Parse(`package {{.Pkg}}

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Text, TextPrompt and AgentText write what the schema says, and read back
// as what they were made of.
func TestTextConstructors(t *testing.T) {
	b, err := json.Marshal(Text("hi"))
	require.NoError(t, err)
	assert.JSONEq(t, ` + "`" + `{"type":"text","text":"hi"}` + "`" + `, string(b))

	b, err = json.Marshal(TextPrompt("s1", "hello"))
	require.NoError(t, err)
	assert.JSONEq(t, ` + "`" + `{"sessionId":"s1","prompt":[{"type":"text","text":"hello"}]}` + "`" + `, string(b))

	b, err = json.Marshal(AgentText("s1", {{if ge .Version 2}}"m1", {{end}}"You said: hello"))
	require.NoError(t, err)
	assert.JSONEq(t, ` + "`" + `{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk",{{if ge .Version 2}}"messageId":"m1",{{end}}"content":{"type":"text","text":"You said: hello"}}}` + "`" + `, string(b))
	var n {{.Notification}}
	require.NoError(t, json.Unmarshal(b, &n))
	text, ok := AgentTextOf(n.Update)
	assert.True(t, ok)
	assert.Equal(t, "You said: hello", text)
}

// TextOf joins the text blocks and skips the others.
func TestTextOf(t *testing.T) {
	blocks := []ContentBlock{Text("one"), {Value: ImageContent{Data: "AA=="}}, Text(" two")}
	assert.Equal(t, "one two", TextOf(blocks))
	assert.Empty(t, TextOf(nil))
}

// AgentTextOf is false for an agent's chunk that is not text and for any
// other update.
func TestAgentTextOfOtherUpdates(t *testing.T) {
	image := ContentBlock{Value: ImageContent{Data: "AA=="}}
	for name, u := range map[string]SessionUpdate{
		"image chunk": {Value: AgentMessageChunk{Content: image}},
		"user's text": {Value: UserMessageChunk{Content: Text("hi")}},
		"no update":   {},
	} {
		text, ok := AgentTextOf(u)
		assert.False(t, ok, name)
		assert.Empty(t, text, name)
	}
}
`))
