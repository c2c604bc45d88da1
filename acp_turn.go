package acprpc

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc/internal/wire"
)

// DefaultTurnCancelWait is how long a session/prompt call whose context
// ended waits for the agent's answer to the session/cancel it sent, unless
// Options.TurnCancelWait says otherwise. It is longer than an acprpc
// agent's DefaultCancelGrace, after which such an agent answers for a turn
// that ignores its cancel, with room for a model's next streamed event,
// at which some agents notice the cancel; agents that honour
// session/cancel answer within milliseconds.
const DefaultTurnCancelWait = 5 * time.Second

// turnWatch follows one of this side's session/prompt calls: the session
// its turn runs in, and whether this side cancelled the turn before the
// answer came.
type turnWatch struct {
	sessionID string // "" for a prompt whose params name no session by a string
	report    bool   // Options.ReportCancelledTurns: an end_turn after the cancel is reported cancelled
	// sent: the prompt is queued for the agent. Only then can a
	// session/cancel, queued after it, cancel its turn: one queued while
	// the prompt is held reaches the agent before it, and cancels nothing
	// of its turn.
	sent      atomic.Bool
	cancelled atomic.Bool
	// cancelledAt is when this side first cancelled the turn (UnixNano),
	// set before cancelled: the session's next prompts are held for its
	// answer until TurnCancelWait after it, and no longer.
	cancelledAt atomic.Int64
	// waitedOut: a prompt has gone out without the turn's answer, and
	// with a warning, which is given once per turn.
	waitedOut atomic.Bool
}

// markCancelled records that this side cancelled the turn, and when, and
// reports whether it was the first cancel.
func (t *turnWatch) markCancelled() bool {
	t.cancelledAt.CompareAndSwap(0, time.Now().UnixNano())
	return !t.cancelled.Swap(true)
}

// watchTurn starts following pc when it is a prompt turn, and reports
// whether it is. f is the call's request, whose params name the session.
func (c *Conn) watchTurn(pc *pendingCall, f *frame) bool {
	if pc.method != methodSessionPrompt {
		return false
	}
	turn := &pc.acp.watch
	turn.report = c.opts.ReportCancelledTurns
	if sid := wire.Member(wire.Member(f.Buf.Bytes(), "params"), "sessionId"); len(sid) > 0 && sid[0] == '"' {
		turn.sessionID = wire.Unquote(sid)
	}
	// The call is in the table already, where a CancelSession looks for
	// the session's turns under the table's lock.
	c.calls.mu.Lock()
	pc.acp.turn = turn
	c.calls.mu.Unlock()
	return true
}

// awaitCancelledTurns holds a prompt call, before it is sent, until the
// agent has answered every turn of its session that this side cancelled
// and that the agent has not answered yet (their calls returned when their
// wait ran out): ACP's updates name the session, not the turn, and an agent
// sends a cancelled turn's last updates before its answer, so once the
// answer is read nothing of that turn can be taken for the new one's. Each
// turn holds prompts until TurnCancelWait after its cancel, and no longer:
// an agent that never answers cancelled turns costs each one that wait
// once, not every later prompt of the session anew. A prompt that goes out
// without a turn's answer is warned about, once per turn. Shutdown and ctx
// end the hold, and the call, with nothing sent.
func (c *Conn) awaitCancelledTurns(ctx context.Context, pc *pendingCall) error {
	turn := pc.acp.turn
	if turn == nil || turn.sessionID == "" || c.turnCancelWait() == 0 {
		return nil
	}
	earlier := c.cancelledTurns(turn.sessionID, pc)
	if len(earlier) == 0 {
		return nil
	}
	var deadline int64
	for _, e := range earlier {
		deadline = max(deadline, e.acp.turn.cancelledAt.Load()+int64(c.turnCancelWait()))
	}
	if hold := time.Until(time.Unix(0, deadline)); hold > 0 {
		c.log.Debug("acprpc: holding a prompt until the agent answers the session's cancelled turn",
			"session", turn.sessionID, "turns", len(earlier))
		wait := time.NewTimer(hold)
		defer wait.Stop()
		for _, e := range earlier {
			select {
			case <-e.done:
			case <-c.closed:
				return nil // the call finds the connection closed
			case <-c.stopping:
				return cancelledCall{ctxErr: ErrShutdown}
			case <-ctx.Done():
				return cancelledCall{ctxErr: ctx.Err()}
			case <-wait.C:
				c.warnUnansweredTurns(turn.sessionID, earlier)
				return nil
			}
		}
		return nil
	}
	c.warnUnansweredTurns(turn.sessionID, earlier)
	return nil
}

// warnUnansweredTurns warns that a prompt of the session goes out though
// the agent has not answered some of its cancelled turns, once per turn.
func (c *Conn) warnUnansweredTurns(sessionID string, turns []*pendingCall) {
	var unanswered int
	for _, t := range turns {
		select {
		case <-t.done:
		default:
			if !t.acp.turn.waitedOut.Swap(true) {
				unanswered++
			}
		}
	}
	if unanswered > 0 {
		c.log.Warn("acprpc: the agent has not answered a prompt whose turn was cancelled; "+
			"sending the session's next prompt anyway, whose updates may include the earlier turn's. "+
			"Logged once per cancelled turn",
			"session", sessionID, "turns", unanswered, "waited", c.turnCancelWait().String())
	}
}

// cancelledTurns returns the session's prompt calls other than pc whose
// turns this side cancelled and the agent has not answered.
func (c *Conn) cancelledTurns(sessionID string, pc *pendingCall) []*pendingCall {
	c.calls.mu.Lock()
	defer c.calls.mu.Unlock()
	var turns []*pendingCall
	for _, calls := range []map[int64]*pendingCall{c.calls.m, c.calls.released} {
		for _, other := range calls {
			if t := other.acp.turn; other != pc && t != nil && t.sessionID == sessionID && t.cancelled.Load() {
				turns = append(turns, other)
			}
		}
	}
	return turns
}

// cancelTurn cancels the turn of a prompt call whose context ended, or that
// Shutdown cancelled, as ACP's prompt-turn page prescribes: session/cancel
// for its session, with everything CancelSession does. The agent then owes
// the prompt its stopReason "cancelled", which the call waits for
// (Options.TurnCancelWait, unless the call set its own WaitAfterCancel).
//
// No $/cancel_request is sent for the prompt: ACP v1 lets an agent ignore
// it, and both of the most used agents do (one answers the notification
// with an error); one that honoured it as well as session/cancel could
// answer the prompt -32800 instead of the stop reason the client wants.
// It reports which cancel was sent, and false for a prompt that names no
// session, which only $/cancel_request can reach, or one made with
// CancelRequestOnly.
func (c *Conn) cancelTurn(ctx context.Context, pc *pendingCall, co *callOptions) (how string, ok bool) {
	turn := pc.acp.turn
	if turn == nil || turn.sessionID == "" || co.requestCancel {
		return "", false
	}
	if !co.waitSet {
		co.waitAfterCancel = c.turnCancelWait()
	}
	how = methodSessionCancel + " for session " + strconv.Quote(turn.sessionID)
	if turn.cancelled.Load() {
		return how + " (by CancelSession)", true // one session/cancel ends every turn of the session
	}
	// The call's context has ended; the cancel goes out with its values.
	_ = c.cancelSession(context.WithoutCancel(ctx), turn.sessionID)
	return how, true
}

// turnCancelWait is Options.TurnCancelWait settled: its default for zero,
// no wait for a negative value.
func (c *Conn) turnCancelWait() time.Duration {
	switch w := c.opts.TurnCancelWait; {
	case w == 0:
		return DefaultTurnCancelWait
	case w < 0:
		return 0
	default:
		return w
	}
}

// cancelTurns records that this side is cancelling the session's turns
// whose prompts are queued for the agent, ahead of the session/cancel:
// the answers read from now on to its prompt calls are reported cancelled,
// and a call whose context ends afterwards sends no second session/cancel.
func (c *Conn) cancelTurns(sessionID string) {
	if sessionID == "" {
		return
	}
	c.calls.mu.Lock()
	defer c.calls.mu.Unlock()
	for _, pc := range c.calls.m {
		if t := pc.acp.turn; t != nil && t.sessionID == sessionID && t.sent.Load() {
			t.markCancelled()
		}
	}
}

// turnsInFlight returns the sessions of this side's prompt calls sent
// whose turns were not cancelled, and records them cancelled.
func (c *Conn) turnsInFlight() []string {
	c.calls.mu.Lock()
	defer c.calls.mu.Unlock()
	var sessions []string
	for _, pc := range c.calls.m {
		turn := pc.acp.turn
		if turn != nil && turn.sessionID != "" && turn.sent.Load() && turn.markCancelled() {
			sessions = append(sessions, turn.sessionID)
		}
	}
	return sessions
}

// turnResult is the result the caller of a watched prompt gets: the
// agent's, with an end_turn stopReason turned into cancelled when this
// side cancelled the turn first and Options.ReportCancelledTurns asks for
// it, as ACP requires of the agent and as many v1 agents fail to do. Every
// other member is kept.
func (pc *pendingCall) turnResult(result []byte) []byte {
	if pc.acp.turn == nil || !pc.acp.turn.report || !pc.acp.turn.cancelled.Load() {
		return result
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(result, &members) != nil || string(members["stopReason"]) != `"`+stopReasonEndTurn+`"` {
		return result
	}
	members["stopReason"] = json.RawMessage(`"` + stopReasonCancelled + `"`)
	out, err := json.Marshal(members)
	if err != nil {
		return result
	}
	return out
}
