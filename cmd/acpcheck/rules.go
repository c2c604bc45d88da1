package main

// Rule is one thing the protocol requires of an agent, and where it says so.
type Rule struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Spec  string `json:"spec"` // the page that states it
}

// The pages the rules come from.
const (
	pageInit         = "https://agentclientprotocol.com/protocol/initialization"
	pageSession      = "https://agentclientprotocol.com/protocol/session-setup"
	pagePromptTurn   = "https://agentclientprotocol.com/protocol/prompt-turn"
	pageTurnCancel   = "https://agentclientprotocol.com/protocol/prompt-turn#cancellation"
	pageCancellation = "https://agentclientprotocol.com/protocol/v1/cancellation"
	pageTransports   = "https://agentclientprotocol.com/protocol/transports"
	pageJSONRPC      = "https://www.jsonrpc.org/specification"
	pageV2Schema     = "https://agentclientprotocol.com/protocol/v2/schema"
	pageV2Cancel     = "https://agentclientprotocol.com/protocol/v2/cancellation"
	pageV2ToolCalls  = "https://agentclientprotocol.com/protocol/v2/tool-calls#cancelling-tool-calls"
)

// The rules acpcheck checks, in the order of its report.
var (
	ruleInitialize     = Rule{"initialize", "initialize is answered with a protocolVersion at or below the client's", pageInit}
	ruleSessionNew     = Rule{"session-new", "session/new is answered with a sessionId", pageSession}
	rulePromptTurn     = Rule{"prompt-turn", "a prompt turn ends with an answer that carries a stopReason", pagePromptTurn}
	ruleCancelStop     = Rule{"cancel-stop-reason", "a prompt cancelled by session/cancel is answered stopReason \"cancelled\", not an error", pageTurnCancel}
	ruleTurnAfter      = Rule{"turn-after-cancel", "the prompt after a cancelled turn gets a turn of its own, its updates before its answer", pagePromptTurn}
	ruleCancelRequest  = Rule{"cancel-request", "a prompt cancelled by $/cancel_request is answered once, stopReason \"cancelled\" or -32800", pageCancellation}
	ruleNoteUnanswered = Rule{"notification-unanswered", "a notification is never answered ($/cancel_request of an unknown or answered ID included)", pageCancellation}
	ruleOneAnswer      = Rule{"one-answer", "every request is answered exactly once", pageJSONRPC}
	ruleUnknownID      = Rule{"unknown-id", "no answer carries an ID the client never used", pageJSONRPC}
	ruleUpdateAfter    = Rule{"update-after-answer", "no session/update of a turn comes after its prompt's answer (v2: after its work's idle state_update)", pageTurnCancel}
	ruleParseError     = Rule{"parse-error", "a line that is not JSON is answered -32700 and the connection lives", pageJSONRPC}
	ruleMethodNotFound = Rule{"method-not-found", "a request for an unknown method is answered -32601", pageJSONRPC}
	ruleStdinExit      = Rule{"stdin-exit", "the agent exits when its stdin closes", pageTransports}
	ruleNoLeftover     = Rule{"no-leftover", "the agent leaves no process behind when it exits", pageTransports}
	ruleOwnRequests    = Rule{"own-requests-cancelled", "a cancelled turn's requests to the client are each cancelled with $/cancel_request", pageV2Cancel}

	ruleV2Initialize   = Rule{"v2-initialize", "initialize asking for v2 is answered 2, or a lower version the agent speaks", pageInit}
	ruleV2PromptAnswer = Rule{"v2-prompt-answer", "v2: session/prompt is answered with the prompt's messageId", pageV2Schema}
	ruleV2OneIdle      = Rule{"v2-one-idle", "v2: each foreground work ends with exactly one idle state_update, also when cancelled", pageV2Schema}
	ruleV2CancelIdle   = Rule{"v2-cancel-idle", "v2: session/cancel ends the work with an idle state_update, stopReason \"cancelled\"", pageV2Cancel}
	ruleV2Close        = Rule{"v2-session-close", "v2: session/close is answered and ends the session's work", pageV2Schema}
	ruleV2Entity       = Rule{"v2-entity-cancel", "v2: tool_call/cancel (terminal/cancel) of an entity advertising capabilities.cancel is accepted and confirmed by its final update; one unknown or final is refused -32602", pageV2ToolCalls}
)

// ruleLineSize is not a rule of the protocol but of acpcheck's memory: a
// line longer than it keeps is reported, and kept cut, marked so.
var ruleLineSize = Rule{"line-size", "a line is no longer than acpcheck keeps (1 MiB in the proxy, the connection's 32 MiB limit in run)", pageTransports}

var allRules = []Rule{
	ruleInitialize, ruleSessionNew, rulePromptTurn, ruleCancelStop, ruleTurnAfter, ruleCancelRequest,
	ruleNoteUnanswered, ruleOneAnswer, ruleUnknownID, ruleUpdateAfter, ruleParseError, ruleMethodNotFound,
	ruleStdinExit, ruleNoLeftover, ruleOwnRequests,
	ruleV2Initialize, ruleV2PromptAnswer, ruleV2OneIdle, ruleV2CancelIdle, ruleV2Close, ruleV2Entity,
}

// v2Rules are the rules only a v2 connection checks.
var v2Rules = []Rule{ruleV2PromptAnswer, ruleV2OneIdle, ruleV2CancelIdle, ruleV2Close, ruleV2Entity}
