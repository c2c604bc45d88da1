package main

// Rule is one thing the protocol requires of an agent (or of a client),
// where it says so, and how strongly.
type Rule struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Spec  string `json:"spec"` // the page that states it
	// Tier is the force the page's words give the rule: a broken MUST fails
	// the run, a broken SHOULD is reported, a MAY (or what the pages leave
	// open) is recorded.
	Tier Tier `json:"tier"`
	// Kit lists the IDs of the official conformance kit's (acp-tck's)
	// requirements the rule covers, if any.
	Kit []string `json:"kit_ids,omitempty"`
}

// Tier is the force of a rule, from the words of the page it cites.
type Tier string

// The tiers, strongest first.
const (
	// TierMust is a MUST (or MUST NOT): breaking it fails the run.
	TierMust Tier = "MUST"
	// TierShould is a SHOULD: breaking it is reported, and the exit status
	// is left alone.
	TierShould Tier = "SHOULD"
	// TierMay is a MAY, or behaviour the pages leave open: what the peer did
	// is recorded, never judged.
	TierMay Tier = "MAY"
)

// The pages the rules come from.
const (
	pageInit         = "https://agentclientprotocol.com/protocol/initialization"
	pageSession      = "https://agentclientprotocol.com/protocol/session-setup"
	pagePromptTurn   = "https://agentclientprotocol.com/protocol/prompt-turn"
	pageTurnCancel   = "https://agentclientprotocol.com/protocol/prompt-turn#cancellation"
	pageCancellation = "https://agentclientprotocol.com/protocol/v1/cancellation"
	pageTransports   = "https://agentclientprotocol.com/protocol/transports"
	pageExtensions   = "https://agentclientprotocol.com/protocol/extensibility"
	pageV1Schema     = "https://agentclientprotocol.com/protocol/schema"
	pageJSONRPC      = "https://www.jsonrpc.org/specification"
	pageV2Schema     = "https://agentclientprotocol.com/protocol/v2/schema"
	pageV2Cancel     = "https://agentclientprotocol.com/protocol/v2/cancellation"
	pageV2ToolCalls  = "https://agentclientprotocol.com/protocol/v2/tool-calls#cancelling-tool-calls"
)

// The rules acpcheck checks, in the order of its report. docs/acpcheck.md
// quotes, for each, the sentence its tier comes from.
var (
	ruleInitialize = Rule{ID: "initialize", Title: "initialize is answered with a protocolVersion at or below the client's", Spec: pageInit, Tier: TierMust}
	ruleSessionNew = Rule{ID: "session-new", Title: "session/new is answered with a sessionId", Spec: pageSession, Tier: TierMust}
	rulePromptTurn = Rule{ID: "prompt-turn", Title: "a prompt turn ends with an answer that carries a stopReason", Spec: pagePromptTurn, Tier: TierMust}
	ruleCancelStop = Rule{ID: "cancel-stop-reason", Title: "a prompt cancelled by session/cancel is answered stopReason \"cancelled\", not an error", Spec: pageTurnCancel, Tier: TierMust,
		Kit: []string{"ACP-CANCEL-001"}}
	ruleTurnAfter      = Rule{ID: "turn-after-cancel", Title: "the prompt after a cancelled turn gets a turn of its own, its updates before its answer", Spec: pagePromptTurn, Tier: TierMay}
	ruleCancelRequest  = Rule{ID: "cancel-request", Title: "a prompt cancelled by $/cancel_request is answered once, stopReason \"cancelled\" or -32800", Spec: pageCancellation, Tier: TierMust}
	ruleNoteUnanswered = Rule{ID: "notification-unanswered", Title: "a notification is never answered ($/cancel_request of an unknown or answered ID included)", Spec: pageCancellation, Tier: TierMust,
		Kit: []string{"ACP-JSONRPC-003", "ACP-CANCEL-205"}}
	ruleOneAnswer   = Rule{ID: "one-answer", Title: "every request is answered exactly once", Spec: pageJSONRPC, Tier: TierMust}
	ruleUnknownID   = Rule{ID: "unknown-id", Title: "no answer carries an ID the client never used", Spec: pageJSONRPC, Tier: TierMust}
	ruleUpdateAfter = Rule{ID: "update-after-answer", Title: "no session/update of a turn comes after its prompt's answer (v2: after its work's idle state_update)", Spec: pageTurnCancel, Tier: TierMust,
		Kit: []string{"ACP-CANCEL-002"}}
	ruleParseError = Rule{ID: "parse-error", Title: "a line that is not JSON is answered -32700 and the connection lives", Spec: pageTransports, Tier: TierMay,
		Kit: []string{"ACP-INFO-PARSE-001"}}
	ruleMethodNotFound = Rule{ID: "method-not-found", Title: "a request for an unknown method is answered -32601", Spec: pageJSONRPC, Tier: TierShould,
		Kit: []string{"ACP-JSONRPC-004", "ACP-JSONRPC-005"}}
	ruleStdinExit   = Rule{ID: "stdin-exit", Title: "the agent exits when its stdin closes", Spec: pageTransports, Tier: TierMay, Kit: []string{"ACP-SHUTDOWN-001"}}
	ruleNoLeftover  = Rule{ID: "no-leftover", Title: "the agent leaves no process behind when it exits", Spec: pageTransports, Tier: TierMay}
	ruleOwnRequests = Rule{ID: "own-requests-cancelled", Title: "v1: a cancelled turn's requests to the client are each cancelled with $/cancel_request", Spec: pageCancellation, Tier: TierMay}

	ruleV2Initialize   = Rule{ID: "v2-initialize", Title: "initialize asking for v2 is answered 2, or a lower version the agent speaks", Spec: pageInit, Tier: TierMust}
	ruleV2PromptAnswer = Rule{ID: "v2-prompt-answer", Title: "v2: session/prompt is answered with the prompt's messageId", Spec: pageV2Schema, Tier: TierMust}
	ruleV2OneIdle      = Rule{ID: "v2-one-idle", Title: "v2: each foreground work ends with exactly one idle state_update, also when cancelled", Spec: pageV2Schema, Tier: TierMust,
		Kit: []string{"ACP-CANCEL-202"}}
	ruleV2CancelIdle = Rule{ID: "v2-cancel-idle", Title: "v2: session/cancel ends the work with an idle state_update, stopReason \"cancelled\"", Spec: pageV2Cancel, Tier: TierMust,
		Kit: []string{"ACP-CANCEL-201", "ACP-CANCEL-203"}}
	ruleV2OwnRequests = Rule{ID: "v2-own-requests-cancelled", Title: "v2: a cancelled work's requests to the client are each cancelled with $/cancel_request", Spec: pageV2Cancel, Tier: TierShould,
		Kit: []string{"ACP-INFO-CANCEL-202"}}
	ruleV2Close = Rule{ID: "v2-session-close", Title: "v2: session/close is answered and ends the session's work", Spec: pageV2Schema, Tier: TierMust,
		Kit: []string{"ACP-CANCEL-208", "ACP-CLOSE-202"}}
	ruleV2Entity = Rule{ID: "v2-entity-cancel", Title: "v2: tool_call/cancel (terminal/cancel) of an entity advertising capabilities.cancel is accepted and confirmed by its final update; one unknown or final is refused -32602", Spec: pageV2ToolCalls, Tier: TierMust}
)

// ruleLineSize is not a rule of the protocol but of acpcheck's memory: a
// line longer than it keeps is reported, and kept cut, marked so.
// It is recorded only: the pages set no limit.
var ruleLineSize = Rule{ID: "line-size", Title: "a line is no longer than acpcheck keeps (1 MiB in the proxy, the connection's 32 MiB limit in run)", Spec: pageTransports, Tier: TierMay}

var allRules = []Rule{
	ruleInitialize, ruleSessionNew, rulePromptTurn, ruleCancelStop, ruleTurnAfter, ruleCancelRequest,
	ruleNoteUnanswered, ruleOneAnswer, ruleUnknownID, ruleUpdateAfter, ruleParseError, ruleMethodNotFound,
	ruleStdinExit, ruleNoLeftover, ruleOwnRequests,
	ruleFraming, ruleEnvelope, ruleErrorMessage, ruleIDEcho, ruleExtRequest, ruleSessionClose, ruleCancelMeta, ruleIdleCancel,
	ruleV2Initialize, ruleV2PromptAnswer, ruleV2OneIdle, ruleV2CancelIdle, ruleV2OwnRequests, ruleV2Close, ruleV2Entity,
}

// v2Rules are the rules only a v2 connection checks.
var v2Rules = []Rule{ruleV2PromptAnswer, ruleV2OneIdle, ruleV2CancelIdle, ruleV2OwnRequests, ruleV2Close, ruleV2Entity}

// The rules of a line by itself: what any message on the wire must be, from
// whichever side.
var (
	ruleFraming = Rule{ID: "framing", Title: "every line is one JSON-RPC 2.0 message in UTF-8: no other output, no raw newline inside a message, no batch", Spec: pageTransports, Tier: TierMust,
		Kit: []string{"ACP-TRANSPORT-001", "ACP-TRANSPORT-002", "ACP-TRANSPORT-201", "ACP-TRANSPORT-203"}}
	ruleEnvelope = Rule{ID: "answer-envelope", Title: "an answer has an id and exactly one of result and error; an error has an integer code and a string message", Spec: pageJSONRPC, Tier: TierMust,
		Kit: []string{"ACP-JSONRPC-002"}}
	ruleErrorMessage = Rule{ID: "error-message", Title: "an error's message is a short sentence: not empty, no newline", Spec: pageJSONRPC, Tier: TierShould,
		Kit: []string{"ACP-ERROR-001"}}
	ruleIDEcho = Rule{ID: "id-echo", Title: "an answer echoes its request's ID exactly: a string ID as a string, a number as a number", Spec: pageJSONRPC, Tier: TierMust,
		Kit: []string{"ACP-JSONRPC-001"}}
)

// The rules of the scenarios that bring about what the conformance kit
// checks besides acpcheck's first rules.
var (
	ruleExtRequest = Rule{ID: "ext-request", Title: "a request for an unknown _-prefixed (extension) method is answered", Spec: pageExtensions, Tier: TierMust,
		Kit: []string{"ACP-EXT-001"}}
	ruleSessionClose = Rule{ID: "session-close", Title: "v1: session/close, when advertised, cancels the session's running turn: stopReason \"cancelled\"", Spec: pageV1Schema, Tier: TierMust,
		Kit: []string{"ACP-CLOSE-002"}}
	ruleCancelMeta = Rule{ID: "cancel-meta", Title: "a session/cancel carrying _meta cancels the turn as one without does", Spec: pageExtensions, Tier: TierMust,
		Kit: []string{"ACP-CANCEL-206"}}
	ruleIdleCancel = Rule{ID: "idle-cancel", Title: "a session/cancel sent while no turn runs (or for an unknown session) is ignored: the next prompt gets a normal turn", Spec: pageTurnCancel, Tier: TierMust,
		Kit: []string{"ACP-INFO-CANCEL-201", "ACP-JSONRPC-003"}}
)

// The rules only a client can break, which the proxy, a replay and
// acpcheck agent check.
var (
	ruleClientPermission = Rule{ID: "client-permission-cancelled", Title: "client: after session/cancel, each of the session's pending session/request_permission is answered with the cancelled outcome (v1: by the client itself; v2: by the client or at the agent's $/cancel_request, which v2 also owes it)", Spec: pageTurnCancel, Tier: TierMust}
	ruleClientCancelled  = Rule{ID: "client-cancel-answered", Title: "client: a request the agent cancelled with $/cancel_request is answered once, with a result or -32800", Spec: pageCancellation, Tier: TierMust}
)

// conversationRules are the rules of the whole conversation, which run,
// proxy and report judge alike: the monitor holds them, and run feeds it
// its transcript once the agent's output has ended.
var conversationRules = []Rule{ruleCancelStop, ruleCancelRequest, ruleOneAnswer, ruleUnknownID, ruleNoteUnanswered, ruleUpdateAfter,
	ruleFraming, ruleEnvelope, ruleErrorMessage, ruleIDEcho}

// scenarioRules are the rules only run judges, each in the scenario that
// provokes it, with what run knows there that the wire alone does not say.
// Every other rule of allRules is a conversation rule, judged by the
// monitor for run, proxy and report alike.
var scenarioRules = map[string]string{
	ruleInitialize.ID:     "what run asked for: protocolVersion 1, answered within -timeout",
	ruleSessionNew.ID:     "that run's own session/new was answered within -timeout",
	rulePromptTurn.ID:     "which prompt run meant to end by itself, answered within -timeout",
	ruleTurnAfter.ID:      "that the prompt after a cancelled turn is the one run sent in a fresh session, and how many updates that turn had",
	ruleParseError.ID:     "which line run wrote that is not JSON, and that its next request was still answered",
	ruleMethodNotFound.ID: "that the method run asked for is one no agent serves",
	ruleStdinExit.ID:      "the agent's process: whether it exited when run closed its stdin, which no line shows",
	ruleNoLeftover.ID:     "the agent's processes: what still runs after it exited, which no line shows",
	ruleOwnRequests.ID:    "which of the agent's requests run held open at the cancel (a terminal/create)",
	ruleExtRequest.ID:     "that the extension method run asked for is one no agent knows",
	ruleSessionClose.ID:   "that the agent advertised session/close, and which turn run closed",
	ruleCancelMeta.ID:     "which session/cancel run wrote carrying _meta",
	ruleIdleCancel.ID:     "that run's session/cancel went to an idle or unknown session, and which prompt followed it",
	ruleV2Initialize.ID:   "what run asked for: protocolVersion 2",
	ruleV2PromptAnswer.ID: "which prompt run sent in v2, answered within -timeout",
	ruleV2OneIdle.ID:      "which work run's prompt started, watched -settle for a second idle",
	ruleV2CancelIdle.ID:   "which work run cancelled, and waited -cancel-wait for",
	ruleV2OwnRequests.ID:  "which of the agent's requests run held open at the cancel",
	ruleV2Close.ID:        "which session run closed while its work ran",
	ruleV2Entity.ID:       "which tool call or terminal run cancelled, and its probes of a final and an unknown one",
}

// watchedRules are the rules a conversation acpcheck only watches can show
// broken, in the report's order: the proxy reports them as they happen,
// and a replay of its record reports each as passed, failed or not brought
// about.
var watchedRules = []Rule{ruleCancelStop, ruleCancelRequest, ruleNoteUnanswered, ruleOneAnswer, ruleUnknownID, ruleUpdateAfter,
	ruleFraming, ruleEnvelope, ruleErrorMessage, ruleIDEcho, ruleClientPermission, ruleClientCancelled}

// whyNotWatched says, for each watched rule, what a conversation lacks
// that never gave the rule a chance to be broken.
var whyNotWatched = map[string]string{
	ruleCancelStop.ID:       "no prompt cancelled with session/cancel was answered in the recording",
	ruleCancelRequest.ID:    "no prompt cancelled with $/cancel_request was answered in the recording",
	ruleNoteUnanswered.ID:   "the recording holds no notification",
	ruleOneAnswer.ID:        "the recording holds no request",
	ruleUnknownID.ID:        "the recording holds no request",
	ruleFraming.ID:          "the recording holds no line",
	ruleEnvelope.ID:         "the recording holds no answer",
	ruleErrorMessage.ID:     "the recording holds no error answer",
	ruleIDEcho.ID:           "no request was answered in the recording",
	ruleClientPermission.ID: "no session/request_permission was pending when the client sent session/cancel (nor, in v2, cancelled by the agent)",
	ruleClientCancelled.ID:  "the agent cancelled none of its requests with $/cancel_request",
	ruleUpdateAfter.ID:      "no prompt was answered (v2: no work went idle) in the recording",
}
