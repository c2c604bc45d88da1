package main

import (
	"bytes"
	"text/template"
)

// This file writes text.go: constructors and readers for text, the content
// most messages carry, so that a prompt, a reply and their reading are one
// call each instead of a union's composite literal or type switch. v1 and
// v2 differ only in v2's message IDs and the name of session/update's
// params.

// textFile is text.go's source after its header.
func textFile(m *model, pkg string) (string, error) {
	notification := "SessionNotification"
	if m.version >= 2 {
		notification = "UpdateSessionNotification"
	}
	var b bytes.Buffer
	err := textTemplate.Execute(&b, map[string]any{"Pkg": pkg, "Version": m.version, "Notification": notification})
	return b.String(), err
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
