package main

import (
	"context"
	"errors"
	"io"
	"time"
)

// runOptions say what agent to check and how long to give it.
type runOptions struct {
	Argv   []string     // the agent's command
	Env    []string     // added to the agent's environment
	Remote remoteTarget // or the agent's URL, when it is served remotely

	Prompt     string // a prompt whose turn ends by itself
	SlowPrompt string // a prompt whose turn lasts long enough to cancel
	Cwd        string // session/new's cwd

	Timeout     time.Duration // the longest wait for any answer
	CancelAfter time.Duration // cancel a turn after its first update, or after this
	CancelWait  time.Duration // the longest wait for an answer after a cancel
	ExitWait    time.Duration // the longest wait for the agent to exit once its stdin closed
	Settle      time.Duration // how long to watch for answers that must not come

	// OfferTerminal offers the agent a terminal (v1's clientCapabilities),
	// so that a cancelled turn's terminal/create can be brought about: a
	// terminal that runs nothing, whose every command has exited 0 with no
	// output, and whose create is held, as a permission request is, in a
	// turn about to be cancelled.
	OfferTerminal bool

	Stderr io.Writer // where the agent's stderr is copied, if not nil
}

// errNotRun is the error of an agent that could not be run at all.
var errNotRun = errors.New("the agent could not be run")

// runner drives one agent through the scenarios, as its ACP client: it
// provokes what the rules are about, and judges the rules only a scenario
// can (see scenarioRules); the conversation's rules are the monitor's.
type runner struct {
	*peer       // the agent, the connection and the transcript
	*clientSide // how acpcheck answers the agent's requests
	res         *results

	v2           bool   // the connection speaks v2
	canClose     bool   // the agent advertises sessionCapabilities.close (v1)
	initID       string // initialize's ID, answered before the probes
	freshUpdates int    // content updates of the prompt's turn in a fresh session
	// underWay are the lines of the session/cancel (or the prompt's
	// $/cancel_request) sent to a slow turn seen under way with its
	// requests to the client held open, whose answer cannot have crossed
	// the cancel.
	underWay []int
}

// runChecks runs every scenario against the agent and returns the report,
// or an error wrapping errNotRun if the agent could not be run at all: first
// over a v1 connection, then, in a fresh process of the agent, over v2 if it
// offers v2.
func runChecks(ctx context.Context, o runOptions) (*Report, error) {
	res := newResults()
	r, err := newRunner(ctx, o, res, false)
	if err != nil {
		return nil, err
	}
	defer r.finish()
	if err := r.initialize(); err != nil {
		return nil, err
	}
	if r.res.byID[ruleInitialize.ID].Status == Pass {
		r.scenarios()
	} else {
		for _, rule := range allRules[1:] {
			r.res.notBrought(rule, "initialize failed")
		}
	}
	r.closeStdin()
	r.wireRules()
	rep := &Report{Agent: o.target(), Wire: r.w.all(), CancelsUnderWay: r.underWay, Stderr: r.stderr()}

	res.proto = 2
	if r2, err := newRunner(ctx, o, res, true); err == nil {
		defer r2.finish()
		r2.runV2()
		rep.WireV2 = r2.w.all()
	} else {
		for _, rule := range append([]Rule{ruleV2Initialize}, v2Rules...) {
			res.notBrought(rule, "the agent could not be reached again for v2: %v", err)
		}
	}
	rep.Results = res.list()
	return rep, nil
}

// newRunner starts the agent, or connects to the remote one afresh, as a
// client of v1 or v2.
func newRunner(ctx context.Context, o runOptions, res *results, v2 bool) (*runner, error) {
	cs := &clientSide{offerTerminal: o.OfferTerminal}
	h := cs.client().Router()
	if v2 {
		h = cs.clientV2().Router()
	}
	p, err := dialPeer(ctx, o, h)
	if err != nil {
		return nil, err
	}
	return &runner{peer: p, clientSide: cs, res: res, v2: v2}, nil
}

func (r *runner) scenarios() {
	fresh, ok := r.newSession()
	if !ok {
		return
	}
	r.promptTurn(fresh)
	r.idleCancel(fresh)
	r.sessionCancel()
	r.cancelRequest()
	r.sessionClose()
	r.cancelMeta()
	r.notifications()
	r.stringIDProbe()
	r.badInput()
}
