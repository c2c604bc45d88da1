package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"SessionId":           "SessionID",
		"sessionId":           "SessionID",
		"McpServerHttp":       "MCPServerHTTP",
		"_meta":               "Meta",
		"session/prompt":      "SessionPrompt",
		"$/cancel_request":    "CancelRequest",
		"fs/read_text_file":   "FSReadTextFile",
		"Parse error":         "ParseError",
		"date-time":           "DateTime",
		"agent_message_chunk": "AgentMessageChunk",
		"toolCallIds":         "ToolCallIDs",
	} {
		assert.Equal(t, want, goName(in), in)
	}
	assert.Equal(t, "mcpServer", lowerFirst("MCPServer"))
	assert.Equal(t, "contentBlock", lowerFirst("ContentBlock"))
}
