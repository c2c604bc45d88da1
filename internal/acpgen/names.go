package main

import (
	"strings"
	"unicode"
)

// initialisms are the words Go spells in capitals (SessionID, MCPServer).
var initialisms = map[string]string{
	"id": "ID", "ids": "IDs", "url": "URL", "uri": "URI", "http": "HTTP", "https": "HTTPS", "sse": "SSE",
	"mcp": "MCP", "acp": "ACP", "llm": "LLM", "json": "JSON", "api": "API", "ui": "UI", "uuid": "UUID",
	"rpc": "RPC", "fs": "FS",
}

// words splits a schema name (camelCase, PascalCase, snake_case, kebab,
// a title with spaces, a method path) into its words.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = nil
		}
	}
	runes := []rune(s)
	for i, r := range runes {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && len(cur) > 0 && (unicode.IsLower(cur[len(cur)-1]) ||
			(i+1 < len(runes) && unicode.IsLower(runes[i+1]))):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// goName is the exported Go identifier for a schema name.
func goName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if up, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(up)
			continue
		}
		r := []rune(w)
		b.WriteString(strings.ToUpper(string(r[0])) + string(r[1:]))
	}
	name := b.String()
	if name == "" || unicode.IsDigit([]rune(name)[0]) {
		name = "X" + name
	}
	return name
}

// lowerFirst makes an unexported name of an exported one.
func lowerFirst(s string) string {
	r := []rune(s)
	i := 0
	for i < len(r) && unicode.IsUpper(r[i]) {
		i++
	}
	if i > 1 && i < len(r) {
		i-- // MCPServer -> mcpServer
	}
	if i == 0 {
		i = 1
	}
	return strings.ToLower(string(r[:i])) + string(r[i:])
}

// variantNames names the variants whose own definition cannot be their Go
// type: a definition that a union uses for several tags (SessionUpdate's
// three chunks are all ContentChunk), and variants spelled inline. The key
// is the union's schema name and the variant's tag or title. Variants not
// listed get the tag's name followed by the union's.
var variantNames = map[string]string{
	"SessionUpdate/user_message_chunk":       "UserMessageChunk",
	"SessionUpdate/agent_message_chunk":      "AgentMessageChunk",
	"SessionUpdate/agent_thought_chunk":      "AgentThoughtChunk",
	"RequestPermissionOutcome/cancelled":     "CancelledPermissionOutcome",
	"CreateElicitationResponse/decline":      "ElicitationDeclineAction",
	"CreateElicitationResponse/cancel":       "ElicitationCancelAction",
	"SetSessionConfigOptionRequest/boolean":  "SessionConfigBooleanValue",
	"SetSessionConfigOptionRequest/id":       "SessionConfigIDValue",
	"SetSessionConfigOptionRequest/value_id": "SessionConfigIDValue",
	"DiffChange/add":                         "DiffAdd",
	"DiffChange/delete":                      "DiffDelete",
	"DiffChange/modify":                      "DiffModify",
	"DiffChange/move":                        "DiffMove",
	"DiffChange/copy":                        "DiffCopy",
	"SessionConfigSelectOptions/Ungrouped":   "UngroupedSessionConfigSelectOptions",
	"SessionConfigSelectOptions/Grouped":     "GroupedSessionConfigSelectOptions",
	"MessageMcpResponse/Result":              "MessageMCPResult",
	"MessageMcpResponse/Error":               "MessageMCPError",
	"ProxyResponse/Result":                   "ProxyResult",
	"ProxyResponse/Error":                    "ProxyError",
}

// unionFields names the field that holds an object's variant when the
// discriminator's name would not say what it is.
var unionFields = map[string]string{
	"ElicitationFormMode": "Scope",
	"ElicitationUrlMode":  "Scope",
	"MessageMcpResponse":  "Value",
	"ProxyResponse":       "Value",
}
