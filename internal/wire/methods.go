package wire

// acpMethods are the method names ACP v1 and v2 define. A message naming
// one of them, as written without escapes, takes its Method from here: a
// request or notification then allocates nothing for its name.
var acpMethods = func() map[string]string {
	names := []string{
		"initialize", "authenticate", "$/cancel_request",
		"session/new", "session/load", "session/prompt", "session/cancel", "session/update",
		"session/request_permission", "session/set_mode", "session/set_config_option", "session/close",
		"session/list", "session/resume", "session/fork", "session/delete", "session/archive",
		"session/unarchive", "session/set_title", "session/status",
		"fs/read_text_file", "fs/write_text_file",
		"terminal/create", "terminal/output", "terminal/release", "terminal/wait_for_exit",
		"terminal/kill", "terminal/cancel", "tool_call/cancel",
		"auth/login", "auth/logout", "auth/status", "auth/status_update",
		"elicitation/create", "elicitation/complete", "mcp/message",
		"providers/list", "providers/set", "providers/disable", "proxy/initialize", "proxy/successor",
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}()

// methodName is Unquote for a method name checked by the scanner: one of
// ACP's names is shared, any other is decoded and copied.
func methodName(raw []byte) string {
	if name, ok := acpMethods[string(raw[1:len(raw)-1])]; ok { // the conversion in a lookup does not allocate
		return name
	}
	return Unquote(raw)
}
