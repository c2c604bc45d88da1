package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
)

// peer is what run talks to, and how: the agent (a process acpcheck
// started, or a URL), the client's Conn to it, and the transcript of all
// that went between them. Its waits are bounded by the run's options, and
// end early once the agent's output has ended.
type peer struct {
	o     runOptions
	ctx   context.Context
	w     *transcript
	t     *tap
	conn  *acprpc.Conn
	agent *agentProc
	calls sync.WaitGroup // the client's calls in flight
}

// dialPeer starts the agent, or connects to the remote one afresh, and
// serves h, the client's side, on the connection.
func dialPeer(ctx context.Context, o runOptions, h acprpc.Handler) (*peer, error) {
	c := &peer{o: o, ctx: ctx, w: newTranscript()}
	if o.isRemote() {
		tr, err := o.Remote.dial(ctx, o.Timeout)
		if err != nil {
			return nil, err
		}
		c.t = &tap{s: tr, w: c.w}
	} else {
		agent, err := startAgent(o.Argv, o.Env, o.Stderr)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errNotRun, err)
		}
		c.agent = agent
		c.t = &tap{s: acprpc.NewStreamPipes(agent.stdout, agent.stdin), w: c.w}
	}
	c.conn = acprpc.NewConn(ctx, c.t, h, &acprpc.Options{Hooks: c.w.hooks()})
	return c, nil
}

// bounded is a wait of at most d, which also ends as soon as the agent's
// output has ended: an agent that exited or crashed mid-run is noticed at
// once, not after each later wait's full bound.
func (c *peer) bounded(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(c.ctx, d)
	ctx, cancelCause := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-c.conn.Done():
			cancelCause(errAgentGone)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancelCause(context.Canceled); cancel() }
}

// errAgentGone ends a wait once the agent's output has ended.
var errAgentGone = errors.New("the agent's output ended")

// awaitSent waits, up to Timeout, for a line the client sent from mark on
// that match holds of.
func (c *peer) awaitSent(mark int, match func(Line) bool) (Line, bool) {
	ctx, cancel := c.bounded(c.o.Timeout)
	defer cancel()
	return c.w.await(ctx, mark, match)
}

// exitNote says how the agent ended, if it has.
func (c *peer) exitNote() string {
	if c.agent == nil {
		return ""
	}
	select {
	case <-c.agent.exited:
		return fmt.Sprintf("; the agent exited: %v", c.agent.waitErr)
	case <-time.After(100 * time.Millisecond):
		return ""
	}
}

// answer waits up to d for the answer to req.
func (c *peer) answer(req Line, d time.Duration) (Line, bool) {
	ctx, cancel := c.bounded(d)
	defer cancel()
	return c.w.await(ctx, req.Seq+1, func(l Line) bool { return l.Dir == fromAgent && l.msg.answers(req.msg.ID) })
}

// settle gives answers that must not come the time to come.
func (c *peer) settle() {
	select {
	case <-time.After(c.o.Settle):
	case <-c.ctx.Done():
	}
}

// drain waits for the agent's output to end, so that the transcript holds
// all it wrote.
func (c *peer) drain() {
	select {
	case <-c.conn.Done():
	case <-time.After(c.o.Settle + time.Second):
	}
}

// linesOf is a request's line and its answers'.
func (c *peer) linesOf(req Line) []int {
	if req.Seq == 0 {
		return nil
	}
	out := []int{req.Seq}
	for _, l := range c.w.all()[req.Seq:] {
		if l.Dir == fromAgent && l.msg.answers(req.msg.ID) {
			out = append(out, l.Seq)
		}
	}
	return out
}

// sent matches the client's request or notification of a method.
func sent(method string) func(Line) bool {
	return func(l Line) bool { return l.Dir == toAgent && l.msg.Method == method }
}

// finish stops whatever is left of the agent and the calls to it.
func (c *peer) finish() {
	c.conn.Close()
	if c.agent != nil {
		c.agent.stop(c.stopBounds())
	}
	c.calls.Wait()
}

// stopBounds are the stop of an agent the run is done with: its stdin was
// given ExitWait already, where closeStdin ran.
func (c *peer) stopBounds() stopBounds {
	b := defaultStop
	b.exit = c.o.ExitWait
	return b
}

// stderr is the agent's last words on stderr, if acpcheck started it.
func (c *peer) stderr() string {
	if c.agent == nil {
		return ""
	}
	return c.agent.stderr.String()
}
