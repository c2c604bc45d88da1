package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// bounded is a wait of at most d, which also ends as soon as the agent's
// output has ended: an agent that exited or crashed mid-run is noticed at
// once, not after each later wait's full bound.
func (r *runner) bounded(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.ctx, d)
	ctx, cancelCause := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-r.conn.Done():
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
func (r *runner) awaitSent(mark int, match func(Line) bool) (Line, bool) {
	ctx, cancel := r.bounded(r.o.Timeout)
	defer cancel()
	return r.w.await(ctx, mark, match)
}

// exitNote says how the agent ended, if it has.
func (r *runner) exitNote() string {
	if r.agent == nil {
		return ""
	}
	select {
	case <-r.agent.exited:
		return fmt.Sprintf("; the agent exited: %v", r.agent.waitErr)
	case <-time.After(100 * time.Millisecond):
		return ""
	}
}

// answer waits up to d for the answer to req.
func (r *runner) answer(req Line, d time.Duration) (Line, bool) {
	ctx, cancel := r.bounded(d)
	defer cancel()
	return r.w.await(ctx, req.Seq+1, func(l Line) bool { return l.Dir == fromAgent && l.msg.answers(req.msg.ID) })
}

// settle gives answers that must not come the time to come.
func (r *runner) settle() {
	select {
	case <-time.After(r.o.Settle):
	case <-r.ctx.Done():
	}
}

// drain waits for the agent's output to end, so that the transcript holds
// all it wrote.
func (r *runner) drain() {
	select {
	case <-r.conn.Done():
	case <-time.After(r.o.Settle + time.Second):
	}
}

// linesOf is a request's line and its answers'.
func (r *runner) linesOf(req Line) []int {
	if req.Seq == 0 {
		return nil
	}
	out := []int{req.Seq}
	for _, l := range r.w.all()[req.Seq:] {
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
