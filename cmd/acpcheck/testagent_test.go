package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The test binary is also the agents the tests check: run with agentEnv set
// to a list of faults (or "correct"), it is an ACP v1 agent written on raw
// lines, correct except for those faults, so that each breaks one rule the
// way agents in the field do, even where acprpc would refuse to.
const agentEnv = "ACPCHECK_TEST_AGENT"

// The faults the test agent can be given.
const (
	faultCancelError       = "cancel-error"        // a cancelled prompt answered with an error
	faultCancelEndTurn     = "cancel-end-turn"     // a cancelled prompt answered end_turn
	faultCancelIgnored     = "cancel-ignored"      // session/cancel ignored: the prompt never answered
	faultCancelTwice       = "cancel-twice"        // a cancelled prompt answered twice
	faultUpdateAfterCancel = "update-after-cancel" // an update after the cancelled prompt's answer
	faultEmptyTurnAfter    = "empty-turn-after"    // the prompt after a cancel answered at once, its reply after it
	faultAnswerNote        = "answer-notification" // $/cancel_request answered with an ID-less -32601
	faultCancelReqError    = "cancel-request-error"
	faultIgnoreCancelReq   = "ignore-cancel-request" // allowed in v1: not brought about
	faultAnswerUnknownID   = "answer-unknown-id"     // a cancel of an unknown ID answered with that ID
	faultNoParseError      = "no-parse-error"        // a line that is not JSON ignored
	faultExitOnParseError  = "exit-on-parse-error"
	faultUnknownResult     = "unknown-method-result" // an unknown method answered with a result
	faultIgnoreEOF         = "ignore-eof"            // stays after its stdin closed
	faultLeaveChild        = "leave-child"           // a child that outlives it
	faultBadVersion        = "bad-version"           // answers protocolVersion 2 to 1
	faultNoOutput          = "exit-at-once"          // exits before answering anything
	faultNoSessionID       = "session-without-id"    // session/new answered without a sessionId
	faultNoStopReason      = "turn-without-stop"     // a prompt that ends by itself answered without a stopReason

	faultV1Only        = "v1-only"              // answers protocolVersion 1 to a client asking for 2
	faultV2Above       = "v2-version-3"         // answers protocolVersion 3 to a client asking for 2
	faultV2StopAnswer  = "v2-stop-answer"       // a v2 prompt answered v1's way, with a stopReason
	faultV2TwoIdles    = "v2-two-idles"         // each v2 work ends with two idle state_updates
	faultV2NoIdle      = "v2-no-idle"           // cancelled v2 work never goes idle
	faultV2EndTurnIdle = "v2-end-turn-idle"     // cancelled v2 work goes idle with end_turn
	faultV2KeepRequest = "v2-keep-request"      // the permission request left open when the work is cancelled
	faultV2CloseError  = "v2-close-error"       // session/close answered with an error
	faultV2UpdateIdle  = "v2-update-after-idle" // one more message chunk after the cancelled work's idle
	faultLateAnswer    = "late-second-answer"   // v2: the last request answered again as its stdin ends
	faultNotUTF8       = "not-utf8"             // the quick turn's update carries a byte that is not UTF-8
	faultExitMidTurn   = "exit-mid-turn"        // v1: exits when the first slow turn is cancelled
	faultCrossed       = "cancel-crossed"       // a cancelled prompt answered end_turn at once, as a turn that ended as the cancel came
	faultHugeUpdate    = "huge-update"          // the quick turn sends an update of hugeLine bytes
	faultFlood         = "flood-updates"        // the quick turn sends flood()'s 2 MiB of updates before its answer
	faultNoise         = "noise"                // a line that is not JSON before each message it sends
	faultSilent        = "silent"               // reads everything, answers nothing
	faultCloseStdout   = "close-stdout"         // closes its stdout once initialize is answered, and writes on
	faultUninvited     = "uninvited-terminal"   // v1: the quick turn calls terminal/create, never offered, and fails with it

	faultV2EntityError   = "v2-entity-error"    // tool_call/cancel of an advertised tool call answered with an error
	faultV2EntityNoFinal = "v2-entity-no-final" // tool_call/cancel accepted, the tool call never made final
	faultV2EntityAnyID   = "v2-entity-any-id"   // tool_call/cancel of an unknown or final tool call accepted
	faultV2LateTool      = "v2-late-tool"       // the slow work's cancellable tool call advertised half a second after it began

	faultCancelReqEndTurn = "cancel-request-end-turn" // a prompt cancelled by $/cancel_request answered end_turn
	faultKeepTerminal     = "keep-terminal"           // v1: a cancelled turn's terminal/create left open

	faultStdoutLog         = "stdout-log"          // a log line on stdout, which is not a message
	faultBadUTF8           = "bad-utf8"            // an update whose text holds a byte that is not UTF-8
	faultRawNewline        = "raw-newline"         // an update written over two lines
	faultBatch             = "batch"               // an update sent as a one-element batch
	faultAnswerBoth        = "answer-both"         // a request with a string ID answered with both result and error
	faultCodeString        = "code-string"         // a request with a string ID refused with its error's code a string
	faultMessageNewline    = "message-newline"     // -32601 with a message of two lines
	faultIDAsNumber        = "string-id-number"    // a string ID of digits answered as a number
	faultIgnoreExt         = "ignore-ext"          // a request for an unknown _-prefixed method left unanswered
	faultCloseKeepsTurn    = "close-keeps-turn"    // v1 session/close answered, the turn left running
	faultCancelMetaIgnored = "cancel-meta-ignored" // a session/cancel carrying _meta ignored
	faultStaleCancel       = "stale-cancel"        // a session/cancel with no turn running fails the session's next prompt -32603

	// askPermission is no fault: a v1 slow turn asks the client for
	// permission, as the proxy's client rules need.
	askPermission       = "ask-permission"
	faultFollowsOutcome = "cancel-follows-outcome" // v1: session/cancel ignored; a turn ends cancelled only when its permission request is answered cancelled
	faultParseNoID      = "parse-error-no-id"      // a line that is not JSON answered -32700 with no id member

	faultIgnoreTerm = "ignore-sigterm" // SIGTERM and SIGINT ignored
	faultOwnGroup   = "leave-group"    // leaves the process group acpcheck gave it for its parent's
	faultDaemon     = "daemon-child"   // a child that double-forks and calls setsid, outliving it
)

// Agents that are not ACP agents, for the proxy's byte-exactness.
const (
	agentCat       = "cat"
	agentFloodExit = "flood-exit"
	agentTicker    = "ticker"    // writes an update every few milliseconds until its stdin ends, answering nothing
	agentHugeLine  = "huge-line" // writes one line of hugeLine bytes, then a short one, and exits
)

// flood is what those agents write unasked: 2 MiB of session/update lines
// of many lengths.
func flood() []byte {
	var b strings.Builder
	for i := 0; b.Len() < 2<<20; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}}}`+"\n",
			strings.Repeat("é", i%700))
	}
	return []byte(b.String())
}

// cutLine is the line agentFloodExit leaves unfinished when it exits.
const cutLine = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","upd`

// childEnv makes the test binary the child faultLeaveChild leaves behind.
const childEnv = "ACPCHECK_TEST_CHILD"

// testAgentMain runs the test binary as an agent or a child, if asked to,
// and reports whether it did.
func testAgentMain() bool {
	if os.Getenv(asAcpcheckEnv) != "" {
		_ = os.Unsetenv(asAcpcheckEnv) // the agents it starts are agents
		main()
	}
	switch os.Getenv(childEnv) {
	case "":
	case daemonFirst:
		startDaemon()
		return true
	default:
		notePID(os.Getenv(childEnv))
		time.Sleep(60 * time.Second) // bounded: acpcheck kills it long before
		return true
	}
	spec, ok := os.LookupEnv(agentEnv)
	if !ok {
		return false
	}
	switch spec {
	case agentCat: // echoes its input byte for byte, then floods, then exits
		_, _ = io.Copy(os.Stdout, os.Stdin)
		_, _ = os.Stdout.Write(flood())
		return true
	case agentHugeLine:
		_, _ = os.Stdout.Write(hugeUpdate("s1"))
		_, _ = os.Stdout.WriteString(cutLine + "\n")
		return true
	case agentTicker:
		notePID("agent")
		tick()
		return true
	case agentFloodExit: // floods, cuts its last line short and exits 3, reading nothing
		_, _ = os.Stdout.Write(flood())
		_, _ = os.Stdout.WriteString(cutLine)
		os.Exit(3)
	}
	faults := map[string]bool{}
	for _, f := range strings.Split(spec, ",") {
		faults[f] = true
	}
	notePID("agent")
	hostileProcess(faults)
	if faults[faultNoOutput] {
		return true
	}
	if faults[faultLeaveChild] {
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), childEnv+"=child")
		_ = child.Start() // in the agent's process group, stdio not shared
	}
	if os.Getenv(listenEnv) != "" {
		listenRaw(faults)
		return true
	}
	newRawAgent(os.Stdout, faults).serve(os.Stdin)
	if faults[faultIgnoreEOF] {
		time.Sleep(60 * time.Second) // bounded: acpcheck kills it long before
	}
	return true
}

// rawAgent answers line by line, on one goroutine: a slow prompt stays
// pending until it is cancelled, a quick one is answered at once.
type rawAgent struct {
	mu        sync.Mutex // held while a message is handled, or a timer writes
	out       *bufio.Writer
	faults    map[string]bool
	sessions  int
	pending   map[string]string // session → the ID of its prompt in flight (v2: of its permission request)
	tools     map[string]string // v2: session → its slow work's cancellable tool call
	terminal  bool              // v1: the client offers a terminal, which a slow turn asks for
	terminals map[string]string // v1: session → its slow turn's terminal/create in flight
	v2        bool
	cancelled map[string]bool   // sessions whose last turn was cancelled
	stale     map[string]bool   // sessions cancelled with no turn running (faultStaleCancel)
	asked     map[string]string // v1, faultFollowsOutcome: a permission request's ID → its session
	last      json.RawMessage   // the ID of the last request
	uninvited map[string]string // faultUninvited: terminal/create's ID → the prompt's ID it fails
}

type rawMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result struct {
		Outcome struct {
			Outcome string `json:"outcome"`
		} `json:"outcome"`
	} `json:"result"`
	Params struct {
		SessionID       string `json:"sessionId"`
		ToolCallID      string `json:"toolCallId"`
		ProtocolVersion int    `json:"protocolVersion"`
		Capabilities    struct {
			Terminal bool `json:"terminal"`
		} `json:"clientCapabilities"`
		RequestID json.RawMessage `json:"requestId"`
		Meta      json.RawMessage `json:"_meta"`
		Prompt    []struct {
			Text string `json:"text"`
		} `json:"prompt"`
	} `json:"params"`
}

func newRawAgent(out io.Writer, faults map[string]bool) *rawAgent {
	return &rawAgent{out: bufio.NewWriter(out), faults: faults, pending: map[string]string{}, tools: map[string]string{}, terminals: map[string]string{}, cancelled: map[string]bool{}, asked: map[string]string{}, uninvited: map[string]string{}, stale: map[string]bool{}}
}

func (a *rawAgent) serve(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m rawMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			if a.faults[faultExitOnParseError] {
				os.Exit(1)
			}
			switch {
			case a.faults[faultParseNoID]:
				a.send(`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}`)
			case !a.faults[faultNoParseError]:
				a.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
			}
			_ = a.out.Flush()
			continue
		}
		if len(m.ID) > 0 && m.Method != "" {
			a.last = m.ID
		}
		if len(m.ID) == 0 && m.Method == "" { // JSON, but no message
			a.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`)
			_ = a.out.Flush()
			continue
		}
		if a.faults[faultSilent] {
			continue
		}
		a.mu.Lock()
		a.handle(m)
		_ = a.out.Flush()
		a.mu.Unlock()
		if a.faults[faultCloseStdout] && m.Method == "initialize" {
			os.Stdout.Close() // what it writes from now on fails
		}
	}
	if a.v2 && a.faults[faultLateAnswer] && a.last != nil {
		a.result(a.last, `{}`)
		_ = a.out.Flush()
	}
}

func (a *rawAgent) send(format string, args ...any) {
	if a.faults[faultNoise] {
		a.out.WriteString("this is not JSON\n")
	}
	fmt.Fprintf(a.out, format+"\n", args...)
}

func (a *rawAgent) result(id json.RawMessage, result string) {
	id = a.echo(id)
	switch {
	case id[0] == '"' && a.faults[faultAnswerBoth]:
		a.send(`{"jsonrpc":"2.0","id":%s,"result":%s,"error":{"code":-32603,"message":"Internal error"}}`, id, result)
	case id[0] == '"' && a.faults[faultCodeString]:
		a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":"-32603","message":"Internal error"}}`, id)
	default:
		a.send(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
	}
}

// echo is the ID an answer carries: the request's, or with faultIDAsNumber
// a string of digits turned into the number.
func (a *rawAgent) echo(id json.RawMessage) json.RawMessage {
	var s string
	if a.faults[faultIDAsNumber] && json.Unmarshal(id, &s) == nil {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return json.RawMessage(s)
		}
	}
	return id
}

func (a *rawAgent) update(session, text string) {
	a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%q}}}}`, session, text)
}

func (a *rawAgent) handle(m rawMsg) {
	isRequest := len(m.ID) > 0 && m.Method != ""
	if a.v2 && a.handleV2(m) {
		return
	}
	if m.Method == "initialize" && m.Params.ProtocolVersion >= 2 && !a.faults[faultV1Only] {
		a.v2 = true
		v := 2
		if a.faults[faultV2Above] {
			v = 3
		}
		a.result(m.ID, fmt.Sprintf(`{"protocolVersion":%d,"info":{"name":"raw","version":"1"},"capabilities":{}}`, v))
		return
	}
	if prompt, ok := a.uninvited[string(m.ID)]; ok && m.Method == "" {
		delete(a.uninvited, string(m.ID))
		a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"the terminal failed"}}`, prompt)
		return
	}
	if session, ok := a.asked[string(m.ID)]; ok && m.Method == "" {
		a.permissionAnswered(session, m)
		return
	}
	switch m.Method {
	case "initialize":
		a.terminal = m.Params.Capabilities.Terminal
		v := 1
		if a.faults[faultBadVersion] {
			v = 2
		}
		a.result(m.ID, fmt.Sprintf(`{"protocolVersion":%d,"agentCapabilities":{"sessionCapabilities":{"close":{}}},"authMethods":[]}`, v))
	case "session/new":
		a.sessions++
		a.framingFaults(fmt.Sprintf("s%d", a.sessions))
		if a.faults[faultNoSessionID] {
			a.result(m.ID, `{}`)
			return
		}
		a.result(m.ID, fmt.Sprintf(`{"sessionId":"s%d"}`, a.sessions))
	case "session/prompt":
		a.prompt(m)
	case "session/cancel":
		if len(m.Params.Meta) > 0 && a.faults[faultCancelMetaIgnored] {
			return
		}
		if _, running := a.pending[m.Params.SessionID]; !running && a.faults[faultStaleCancel] {
			a.stale[m.Params.SessionID] = true
		}
		a.cancel(m.Params.SessionID)
	case "session/close":
		if !a.faults[faultCloseKeepsTurn] {
			a.cancel(m.Params.SessionID)
		}
		a.result(m.ID, `{}`)
	case "$/cancel_request":
		a.cancelRequest(m.Params.RequestID)
	default:
		switch {
		case isRequest && strings.HasPrefix(m.Method, "_") && a.faults[faultIgnoreExt]:
		case isRequest && a.faults[faultUnknownResult]:
			a.result(m.ID, `{}`)
		case isRequest && a.faults[faultMessageNewline]:
			a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found:\n%s"}}`, m.ID, m.Method)
		case isRequest:
			a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
		}
	}
}

func (a *rawAgent) prompt(m rawMsg) {
	session, text := m.Params.SessionID, ""
	for _, b := range m.Params.Prompt {
		text += b.Text
	}
	if strings.Contains(text, "slow") {
		a.update(session, "Working on it.")
		a.pending[session] = string(m.ID)
		if a.faults[faultFollowsOutcome] || a.faults[askPermission] {
			perm := fmt.Sprintf(`"perm%s"`, m.ID)
			a.send(`{"jsonrpc":"2.0","id":%s,"method":"session/request_permission","params":{"sessionId":%q,"toolCall":{"toolCallId":"c1","title":"Run it"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`, perm, session)
			a.asked[perm] = session
		}
		if a.terminal {
			term := fmt.Sprintf(`"term%s"`, m.ID)
			a.send(`{"jsonrpc":"2.0","id":%s,"method":"terminal/create","params":{"sessionId":%q,"command":"sleep","args":["30"]}}`, term, session)
			a.terminals[session] = term
		}
		return
	}
	if a.stale[session] {
		delete(a.stale, session)
		a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"Internal error: the turn was aborted"}}`, m.ID)
		return
	}
	if a.cancelled[session] && a.faults[faultEmptyTurnAfter] {
		a.result(m.ID, `{"stopReason":"end_turn"}`)
		a.update(session, "Hello.")
		return
	}
	a.update(session, "Hello.")
	if a.faults[faultUninvited] && !a.terminal {
		term := fmt.Sprintf(`"uninvited%s"`, m.ID)
		a.send(`{"jsonrpc":"2.0","id":%s,"method":"terminal/create","params":{"sessionId":%q,"command":"true"}}`, term, session)
		a.uninvited[term] = string(m.ID)
		return
	}
	if a.faults[faultFlood] && session == "s1" { // flood()'s updates are s1's
		_, _ = a.out.Write(flood())
	}
	if a.faults[faultHugeUpdate] {
		_, _ = a.out.Write(hugeUpdate(session))
	}
	if a.faults[faultNotUTF8] {
		a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"caf`+"\xe9"+`"}}}}`, session)
	}
	if a.faults[faultNoStopReason] {
		a.result(m.ID, `{}`)
		return
	}
	a.result(m.ID, `{"stopReason":"end_turn"}`)
}

// framingFaults writes, for a new session, the lines its framing faults
// break the framing rule with: each outside every turn, so that no other
// rule sees them.
func (a *rawAgent) framingFaults(session string) {
	update := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}}`
	switch {
	case a.faults[faultStdoutLog]:
		a.send("[agent] session %s ready", session)
	case a.faults[faultBadUTF8]:
		a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"session_info_update","title":"caf%s"}}}`, session, "\xe9")
	case a.faults[faultRawNewline]:
		a.send(strings.Replace(update, `"params":`, "\n\"params\":", 1), session)
	case a.faults[faultBatch]:
		a.send("["+update+"]", session)
	}
}

// permissionAnswered takes the client's answer to a slow turn's permission
// request (faultFollowsOutcome): the cancelled outcome ends the turn
// cancelled, a grant lets it go on.
func (a *rawAgent) permissionAnswered(session string, m rawMsg) {
	delete(a.asked, string(m.ID))
	if _, running := a.pending[session]; !running {
		return // the turn ended already: the answer is late, and changes nothing
	}
	if m.Result.Outcome.Outcome != "cancelled" {
		a.update(session, "Granted; still counting.")
		return
	}
	a.endCancelled(session)
}

func (a *rawAgent) cancel(session string) {
	if _, running := a.pending[session]; running && a.faults[faultExitMidTurn] && !a.v2 {
		os.Exit(4)
	}
	if a.faults[faultCancelIgnored] || a.faults[faultFollowsOutcome] {
		return
	}
	a.endCancelled(session)
}

// endCancelled ends session's turn in flight as cancelled.
func (a *rawAgent) endCancelled(session string) {
	id, ok := a.pending[session]
	if !ok {
		return
	}
	delete(a.pending, session)
	a.cancelled[session] = true
	if term, ok := a.terminals[session]; ok {
		delete(a.terminals, session)
		if !a.faults[faultKeepTerminal] {
			a.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%s}}`, term)
		}
	}
	a.update(session, "Stopped.")
	switch {
	case a.faults[faultCancelError]:
		a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"aborted"}}`, id)
	case a.faults[faultCancelEndTurn]:
		_ = a.out.Flush()
		time.Sleep(2 * crossWindow) // a turn that ended by itself, long after the cancel: no crossing
		a.result(json.RawMessage(id), `{"stopReason":"end_turn"}`)
	case a.faults[faultCrossed]:
		a.result(json.RawMessage(id), `{"stopReason":"end_turn"}`)
	default:
		a.result(json.RawMessage(id), `{"stopReason":"cancelled"}`)
	}
	if a.faults[faultCancelTwice] {
		a.result(json.RawMessage(id), `{"stopReason":"cancelled"}`)
	}
	if a.faults[faultUpdateAfterCancel] {
		a.update(session, "One more thing.")
	}
}

func (a *rawAgent) cancelRequest(id json.RawMessage) {
	if a.faults[faultAnswerNote] {
		a.send(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}`)
	}
	for session, pending := range a.pending {
		if pending != string(id) {
			continue
		}
		switch {
		case a.faults[faultIgnoreCancelReq]:
			return
		case a.faults[faultCancelReqError]:
			delete(a.pending, session)
			a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"aborted"}}`, id)
		case a.faults[faultCancelReqEndTurn]:
			delete(a.pending, session)
			a.result(id, `{"stopReason":"end_turn"}`)
		default:
			a.cancel(session)
		}
		return
	}
	if a.faults[faultAnswerUnknownID] {
		a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32800,"message":"Request cancelled"}}`, id)
	}
}

// handleV2 serves what v2 changes: a prompt answered once inserted, its work
// reported by state_updates, a permission request the slow work waits on,
// and session/close. It reports whether it served m.
func (a *rawAgent) handleV2(m rawMsg) bool {
	session := m.Params.SessionID
	switch m.Method {
	case "session/prompt":
		if a.faults[faultV2StopAnswer] {
			a.result(m.ID, `{"stopReason":"end_turn"}`)
		} else {
			a.result(m.ID, fmt.Sprintf(`{"messageId":"m%s"}`, m.ID))
		}
		a.state(session, `"state":"running"`)
		text := ""
		for _, b := range m.Params.Prompt {
			text += b.Text
		}
		if strings.Contains(text, "slow") {
			a.tools[session] = fmt.Sprintf("tool%s", m.ID)
			tool := a.tools[session]
			advertise := func() { a.toolUpdate(session, tool, `"status":"in_progress","capabilities":{"cancel":{}}`) }
			if a.faults[faultV2LateTool] {
				a.toolUpdate(session, tool, `"status":"in_progress"`)
				time.AfterFunc(500*time.Millisecond, func() {
					a.mu.Lock()
					defer a.mu.Unlock()
					if a.tools[session] != tool {
						return // its work ended first
					}
					advertise()
					_ = a.out.Flush()
				})
			} else {
				advertise()
			}
			perm := fmt.Sprintf(`"perm%s"`, m.ID)
			a.send(`{"jsonrpc":"2.0","id":%s,"method":"session/request_permission","params":{"sessionId":%q,"title":"Run it?","subject":{"type":"tool_call","toolCall":{"toolCallId":"c1","title":"Run it"}},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`, perm, session)
			a.pending[session] = perm
			return true
		}
		a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","messageId":"r1","content":{"type":"text","text":"Hello."}}}}`, session)
		a.idle(session, "end_turn")
	case "session/cancel":
		a.cancelV2(session)
	case "tool_call/cancel":
		a.cancelTool(m)
	case "session/close":
		a.cancelV2(session)
		if a.faults[faultV2CloseError] {
			a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"cannot close"}}`, m.ID)
		} else {
			a.result(m.ID, `{}`)
		}
	default:
		return false
	}
	return true
}

// cancelTool serves tool_call/cancel: the slow work's tool call is
// accepted and made final, anything else refused -32602.
func (a *rawAgent) cancelTool(m rawMsg) {
	session, id := m.Params.SessionID, m.Params.ToolCallID
	switch {
	case a.faults[faultV2EntityError]:
		a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"cannot cancel"}}`, m.ID)
		return
	case a.tools[session] != id && !a.faults[faultV2EntityAnyID]:
		a.send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"no cancellable tool call %s"}}`, m.ID, id)
		return
	}
	delete(a.tools, session)
	a.result(m.ID, `{}`)
	if !a.faults[faultV2EntityNoFinal] {
		a.toolUpdate(session, id, `"status":"cancelled","capabilities":null`)
	}
}

func (a *rawAgent) toolUpdate(session, id, members string) {
	a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"tool_call_update","toolCallId":%q,%s}}}`, session, id, members)
}

func (a *rawAgent) state(session, state string) {
	a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"state_update",%s}}}`, session, state)
}

func (a *rawAgent) idle(session, stopReason string) {
	n := 1
	if a.faults[faultV2TwoIdles] {
		n = 2
	}
	for range n {
		a.state(session, fmt.Sprintf(`"state":"idle","stopReason":%q`, stopReason))
	}
}

func (a *rawAgent) cancelV2(session string) {
	perm, ok := a.pending[session]
	if !ok {
		return
	}
	delete(a.pending, session)
	if id, ok := a.tools[session]; ok {
		delete(a.tools, session)
		a.toolUpdate(session, id, `"status":"cancelled","capabilities":null`)
	}
	if !a.faults[faultV2KeepRequest] {
		a.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%s}}`, perm)
	}
	switch {
	case a.faults[faultV2NoIdle]:
	case a.faults[faultV2EndTurnIdle]:
		a.idle(session, "end_turn")
	default:
		a.idle(session, "cancelled")
	}
	if a.faults[faultV2UpdateIdle] {
		a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","messageId":"r2","content":{"type":"text","text":"One more thing."}}}}`, session)
	}
}

// asAcpcheckEnv makes the test binary acpcheck itself, run with its
// arguments, so that a test can drive acpcheck as a process: signal it,
// close its pipes, leave its stderr unread.
const asAcpcheckEnv = "ACPCHECK_TEST_AS_ACPCHECK"

// pidsEnv names a file where the test agent and what it starts note
// their process IDs, a line "ROLE PID" each, so that a test can see they
// are gone.
const pidsEnv = "ACPCHECK_TEST_PIDS"

// daemonFirst is childEnv's value for the first fork of faultDaemon.
const daemonFirst = "daemon-first"

// notePID notes this process's ID under role, if a test asked.
func notePID(role string) {
	name := os.Getenv(pidsEnv)
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(role + " " + strconv.Itoa(os.Getpid()) + "\n")
}

// tick writes an update every few milliseconds until its stdin ends.
func tick() {
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(ended)
	}()
	for i := 0; ; i++ {
		select {
		case <-ended:
			return
		case <-time.After(5 * time.Millisecond):
		}
		if _, err := os.Stdout.WriteString(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"tick ` + strconv.Itoa(i) + `"}}}}` + "\n"); err != nil {
			return
		}
	}
}

// hugeLine is the length of the line a hostile agent sends: 100 MiB.
const hugeLine = 100 << 20

// hugeUpdate is a session/update line of hugeLine bytes, its newline
// included.
func hugeUpdate(session string) []byte {
	head := fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`, session)
	tail := `"}}}}` + "\n"
	return []byte(head + strings.Repeat("x", hugeLine-len(head)-len(tail)) + tail)
}
