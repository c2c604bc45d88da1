package bench

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
)

// The turn workload of turns_coder.go, served with acprpc: the turn of
// examples/agent (its internal/demo agent, which this module cannot import),
// without the log it writes, and with each step of a cancel's cascade
// stamped on the CLOCK_MONOTONIC (MonoNow), so that acpbench burst can say
// where the time between the cancels and the last answer goes.

// Phase names one step of the cascade that a session/cancel starts in the
// agent, in the order each turn goes through them.
type Phase int

// The phases, stamped once per message (or per turn) in the agent.
const (
	PhaseCancelRead      Phase = iota // the read loop took a session/cancel from its input
	PhaseCancelled                    // it had cancelled that session's turn: it took the next message, or the application saw the cancel
	PhaseCancelSent                   // a $/cancel_request was handed to the transport
	PhaseHandlerReturned              // a prompt's handler returned
	PhaseAnswerSent                   // a prompt's answer was handed to the transport
	phaseCount
)

// PhaseNames are the phases' names, as acpbench prints them.
var PhaseNames = [phaseCount]string{"cancels read", "contexts cancelled", "$/cancel_request written", "handlers returned", "answers written"}

// Phases holds the stamps of every phase; each kind is stamped at most
// capacity times, once the workload's cancels have begun.
type Phases struct {
	// mono0 is MonoNow at t0: a stamp is mono0 plus the runtime's monotonic
	// time since, which reads the same clock without a system call.
	mono0  int64
	t0     time.Time
	on     atomic.Bool // the first session/cancel has been read
	stamps [phaseCount][]atomic.Int64
	next   [phaseCount]atomic.Int64

	mu        sync.Mutex
	lastWasSC bool // the message read before this one was a session/cancel
}

// NewPhases returns room for capacity stamps of each phase.
func NewPhases(capacity int) *Phases {
	p := &Phases{mono0: MonoNow(), t0: time.Now()}
	for i := range p.stamps {
		p.stamps[i] = make([]atomic.Int64, capacity)
	}
	return p
}

func (p *Phases) stamp(ph Phase) {
	if !p.on.Load() {
		return
	}
	if i := p.next[ph].Add(1) - 1; int(i) < len(p.stamps[ph]) {
		p.stamps[ph][i].Store(p.mono0 + int64(time.Since(p.t0)))
	}
}

// Stamps returns the stamps of ph in the order taken.
func (p *Phases) Stamps(ph Phase) []int64 {
	n := min(int(p.next[ph].Load()), len(p.stamps[ph]))
	out := make([]int64, n)
	for i := range out {
		out[i] = p.stamps[ph][i].Load()
	}
	slices.Sort(out)
	return out
}

// hooks stamps what the Conn reads and writes: the session/cancels read,
// the read loop moving on past each, the $/cancel_requests and the prompts'
// answers handed to the transport.
func (p *Phases) hooks() acprpc.Hooks {
	return acprpc.Hooks{
		Received: func(_ context.Context, m *acprpc.Message) {
			sc := m.Method == acpv1.MethodSessionCancel && m.Kind == acprpc.KindNotification
			if sc {
				p.on.Store(true)
			}
			p.mu.Lock()
			if p.lastWasSC {
				p.stamp(PhaseCancelled)
			}
			p.lastWasSC = sc
			p.mu.Unlock()
			if sc {
				p.stamp(PhaseCancelRead)
			}
		},
		Sent: func(_ context.Context, m *acprpc.Message) {
			switch {
			case m.Method == acprpc.MethodCancelRequest:
				p.stamp(PhaseCancelSent)
			case m.Method == acpv1.MethodSessionPrompt && (m.Kind == acprpc.KindResult || m.Kind == acprpc.KindError):
				p.stamp(PhaseAnswerSent)
			}
		},
	}
}

// cancelSeen stamps a session/cancel handled by the application, unless
// the read loop's next message did it first.
func (p *Phases) cancelSeen() {
	p.mu.Lock()
	if p.lastWasSC {
		p.lastWasSC = false
		p.stamp(PhaseCancelled)
	}
	p.mu.Unlock()
}

// turnConfirmWait is examples/agent's wait, after a cancel, for the client
// to answer the requests the cancel cut short (its -graceful mode).
const turnConfirmWait = time.Second

var (
	turnToolCallV1 = acpv1.ToolCallUpdate{ToolCallID: "call_1", Title: turnTitle,
		Kind: acpv1.ToolKindExecute, Status: acpv1.ToolCallStatusPending}
	turnOptionsV1 = []acpv1.PermissionOption{
		{OptionID: "allow", Name: "Allow once", Kind: acpv1.PermissionOptionKindAllowOnce},
		{OptionID: "reject", Name: "Reject", Kind: acpv1.PermissionOptionKindRejectOnce},
	}
)

// ServeAcprpcTurns serves the turn workload with acprpc on r and w,
// stamping phases, and returns a channel closed once the connection has
// ended. graceful waits, as examples/agent does by default, for the client
// to answer the requests a cancel cut short; otherwise a turn ends at once
// (its -graceful=false). With stopped, a cancelled turn sends a last update
// saying so, as examples/agent's does; without, it answers at once, as
// coder's example agent does.
func ServeAcprpcTurns(r io.Reader, w io.Writer, graceful, stopped bool, phases *Phases) <-chan struct{} {
	wait := time.Duration(0)
	if graceful {
		wait = turnConfirmWait
	}
	agent := acpv1.Agent{
		SessionPrompt: func(ctx context.Context, p acpv1.PromptRequest) (acpv1.PromptResponse, error) {
			defer phases.stamp(PhaseHandlerReturned)
			return acprpcTurn(ctx, acprpc.ConnFromContext(ctx), p.SessionID, wait, stopped)
		},
		SessionCancel: func(context.Context, acpv1.CancelNotification) { phases.cancelSeen() },
	}
	conn := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(r, w), agent.Router(), &acprpc.Options{Hooks: phases.hooks()})
	return conn.Done()
}

// acprpcTurn is examples/agent's turn: a message, the two requests at once
// under the turn's context, and once it is cancelled, a last message and
// the cancelled stop reason; the last message only with stopped.
func acprpcTurn(ctx context.Context, conn *acprpc.Conn, session acpv1.SessionID, wait time.Duration, stopped bool) (acpv1.PromptResponse, error) {
	say := func(ctx context.Context, text string) {
		_ = acpv1.ToClient.SessionUpdate.Notify(ctx, conn, acpv1.AgentText(session, text))
	}
	say(ctx, "Looking into it: I need your permission and a terminal.")
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	graceful := acprpc.WaitAfterCancel(wait)
	var wg sync.WaitGroup
	var permErr, termErr error
	wg.Go(func() {
		var perm acpv1.RequestPermissionResponse
		perm, permErr = acpv1.ToClient.SessionRequestPermission.Call(tctx, conn,
			acpv1.RequestPermissionRequest{SessionID: session, ToolCall: turnToolCallV1, Options: turnOptionsV1}, graceful)
		if _, ok := perm.Outcome.Value.(acpv1.CancelledPermissionOutcome); ok && permErr == nil {
			stop()
		}
	})
	wg.Go(func() {
		_, termErr = acpv1.ToClient.TerminalCreate.Call(tctx, conn,
			acpv1.CreateTerminalRequest{SessionID: session, Command: "sleep", Args: []string{"30"}}, graceful)
	})
	wg.Wait()
	if ctx.Err() == nil && !errors.Is(permErr, acprpc.ErrCancelled) && !errors.Is(termErr, acprpc.ErrCancelled) {
		<-ctx.Done() // the workload's turns are answered by their client; they wait for the cancel
	}
	if stopped {
		say(context.WithoutCancel(ctx), "Stopped (session/cancel).")
	}
	return acpv1.PromptResponse{StopReason: acpv1.StopReasonCancelled}, nil
}
