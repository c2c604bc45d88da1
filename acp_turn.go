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
	cancelled atomic.Bool
}

// watchTurn starts following pc when it is a prompt turn. f is the call's
// request, whose params name the session.
func (c *Conn) watchTurn(pc *pendingCall, f *frame) {
	if pc.method != methodSessionPrompt {
		return
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
}

// awaitCancelledTurns holds a prompt call, before it is sent, until the
// agent has answered every turn of its session that this side cancelled
// and that the agent has not answered yet (their calls returned when their
// wait ran out): ACP's updates name the session, not the turn, and an agent
// sends a cancelled turn's last updates before its answer, so once the
// answer is read nothing of that turn can be taken for the new one's. The
// hold is bounded by TurnCancelWait, after which the prompt goes out with a
// warning, and by ctx, which sends nothing.
func (c *Conn) awaitCancelledTurns(ctx context.Context, pc *pendingCall) error {
	turn := pc.acp.turn
	if turn == nil || turn.sessionID == "" {
		return nil
	}
	earlier := c.cancelledTurns(turn.sessionID, pc)
	if len(earlier) == 0 || c.turnCancelWait() == 0 {
		return nil
	}
	c.log.Debug("acprpc: holding a prompt until the agent answers the session's cancelled turn",
		"session", turn.sessionID, "turns", len(earlier))
	wait := time.NewTimer(c.turnCancelWait())
	defer wait.Stop()
	for _, e := range earlier {
		select {
		case <-e.done:
		case <-c.closed:
			return nil // the call finds the connection closed
		case <-ctx.Done():
			return cancelledCall{ctxErr: ctx.Err()}
		case <-wait.C:
			c.log.Warn("acprpc: the agent has not answered a prompt whose turn was cancelled; "+
				"sending the session's next prompt anyway, whose updates may include the earlier turn's",
				"session", turn.sessionID, "waited", c.turnCancelWait().String())
			return nil
		}
	}
	return nil
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

// cancelTurns records that this side is cancelling the session's turns:
// the answers read from now on to its prompt calls are reported cancelled,
// and a call whose context ends afterwards sends no second session/cancel.
func (c *Conn) cancelTurns(sessionID string) {
	if sessionID == "" {
		return
	}
	c.calls.mu.Lock()
	defer c.calls.mu.Unlock()
	for _, pc := range c.calls.m {
		if pc.acp.turn != nil && pc.acp.turn.sessionID == sessionID {
			pc.acp.turn.cancelled.Store(true)
		}
	}
}

// turnsInFlight returns the sessions of this side's prompt calls in flight
// whose turns were not cancelled, and records them cancelled.
func (c *Conn) turnsInFlight() []string {
	c.calls.mu.Lock()
	defer c.calls.mu.Unlock()
	var sessions []string
	for _, pc := range c.calls.m {
		turn := pc.acp.turn
		if turn != nil && turn.sessionID != "" && !turn.cancelled.Swap(true) {
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
