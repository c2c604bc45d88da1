package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/acpv2"
)

// clientSide is acpcheck's side of the conversation, as the agent's
// client: what it answers the agent's requests, and when. In a turn about
// to be cancelled it holds them (hold), until they are cancelled or the
// client answers them cancelled itself (released).
type clientSide struct {
	offerTerminal bool        // offer a terminal that runs nothing (see nullTerminal)
	hold          atomic.Bool // hold the agent's permission requests until they are cancelled
	released      heldRelease // or until the client answers them cancelled itself
}

// client is acpcheck's side of the conversation: it grants permission
// unless told to hold requests until the turn is cancelled, offers no file
// system, and a terminal only with OfferTerminal (see nullTerminal).
func (cs *clientSide) client() acpv1.Client {
	c := acpv1.Client{
		SessionUpdate: func(context.Context, acpv1.SessionNotification) {},
		SessionRequestPermission: func(ctx context.Context, p acpv1.RequestPermissionRequest) (acpv1.RequestPermissionResponse, error) {
			if cs.hold.Load() {
				select {
				case <-ctx.Done(): // answered with the cancelled outcome
					return acpv1.RequestPermissionResponse{}, ctx.Err()
				case <-cs.released.wait():
					return acpv1.RequestPermissionResponse{Outcome: acpv1.RequestPermissionOutcome{Value: acpv1.CancelledPermissionOutcome{}}}, nil
				}
			}
			return grant(p.Options), nil
		},
	}
	if cs.offerTerminal {
		cs.nullTerminal(&c)
	}
	return c
}

// nullTerminal serves c's terminal methods with terminals that run
// nothing: acpcheck never runs a command an agent asks for. Each command
// has exited 0 with no output by the time terminal/create is answered;
// in a turn about to be cancelled, terminal/create is held until the agent
// cancels it, so that own-requests-cancelled sees whether it does.
func (cs *clientSide) nullTerminal(c *acpv1.Client) {
	var made atomic.Int64
	exited := uint32(0)
	c.TerminalCreate = func(ctx context.Context, _ acpv1.CreateTerminalRequest) (acpv1.CreateTerminalResponse, error) {
		if cs.hold.Load() {
			<-ctx.Done() // answered -32800
			return acpv1.CreateTerminalResponse{}, ctx.Err()
		}
		return acpv1.CreateTerminalResponse{TerminalID: acpv1.TerminalID(fmt.Sprintf("acpcheck-term-%d", made.Add(1)))}, nil
	}
	c.TerminalOutput = func(context.Context, acpv1.TerminalOutputRequest) (acpv1.TerminalOutputResponse, error) {
		return acpv1.TerminalOutputResponse{ExitStatus: &acpv1.TerminalExitStatus{ExitCode: &exited}}, nil
	}
	c.TerminalWaitForExit = func(context.Context, acpv1.WaitForTerminalExitRequest) (acpv1.WaitForTerminalExitResponse, error) {
		return acpv1.WaitForTerminalExitResponse{ExitCode: &exited}, nil
	}
	c.TerminalKill = func(context.Context, acpv1.KillTerminalRequest) (acpv1.KillTerminalResponse, error) {
		return acpv1.KillTerminalResponse{}, nil
	}
	c.TerminalRelease = func(context.Context, acpv1.ReleaseTerminalRequest) (acpv1.ReleaseTerminalResponse, error) {
		return acpv1.ReleaseTerminalResponse{}, nil
	}
}

// grant selects the first option that allows, or else the first.
func grant(opts []acpv1.PermissionOption) acpv1.RequestPermissionResponse {
	if len(opts) == 0 {
		return acpv1.RequestPermissionResponse{Outcome: acpv1.RequestPermissionOutcome{Value: acpv1.CancelledPermissionOutcome{}}}
	}
	pick := opts[0]
	for _, o := range opts {
		if o.Kind == acpv1.PermissionOptionKindAllowOnce || o.Kind == acpv1.PermissionOptionKindAllowAlways {
			pick = o
			break
		}
	}
	return acpv1.RequestPermissionResponse{Outcome: acpv1.RequestPermissionOutcome{Value: acpv1.SelectedPermissionOutcome{OptionID: pick.OptionID}}}
}

// clientV2 is client's v2 form.
func (cs *clientSide) clientV2() acpv2.Client {
	return acpv2.Client{
		SessionUpdate: func(context.Context, acpv2.UpdateSessionNotification) {},
		SessionRequestPermission: func(ctx context.Context, p acpv2.RequestPermissionRequest) (acpv2.RequestPermissionResponse, error) {
			if cs.hold.Load() {
				<-ctx.Done()
				return acpv2.RequestPermissionResponse{}, ctx.Err()
			}
			return grantV2(p.Options), nil
		},
	}
}

func grantV2(opts []acpv2.PermissionOption) acpv2.RequestPermissionResponse {
	if len(opts) == 0 {
		return acpv2.RequestPermissionResponse{Outcome: acpv2.RequestPermissionOutcome{Value: acpv2.CancelledPermissionOutcome{}}}
	}
	pick := opts[0]
	for _, o := range opts {
		if o.Kind == acpv2.PermissionOptionKindAllowOnce || o.Kind == acpv2.PermissionOptionKindAllowAlways {
			pick = o
			break
		}
	}
	return acpv2.RequestPermissionResponse{Outcome: acpv2.RequestPermissionOutcome{Value: acpv2.SelectedPermissionOutcome{OptionID: pick.OptionID}}}
}

// heldRelease lets the client answer the permission requests it holds
// with the cancelled outcome, as a v1 client does on a cancel acprpc did not
// send for it.
type heldRelease struct {
	mu sync.Mutex
	ch chan struct{}
}

// reset starts holding afresh, for a new slow turn.
func (h *heldRelease) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ch = make(chan struct{})
}

// wait is closed once the held requests are to be answered cancelled.
func (h *heldRelease) wait() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ch == nil {
		h.ch = make(chan struct{})
	}
	return h.ch
}

// release answers the requests held with the cancelled outcome.
func (h *heldRelease) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ch == nil {
		h.ch = make(chan struct{})
	}
	select {
	case <-h.ch:
	default:
		close(h.ch)
	}
}
