package acprpc

import (
	"context"
	"errors"
	"sync"
)

// Shutdown closes the connection gracefully, as ACP asks of a side that
// cancels internally (the user closed the editor, the agent was told to
// stop): it stops taking requests (each one read from now on is answered
// as cancelled), cancels every request in flight and every v2 work with
// ErrShutdown, cancels this side's own calls, a prompt's turn with
// session/cancel (Options.TurnCancelWait) and any other call with its
// $/cancel_request (a Call made from now on fails with ErrShutdown), and
// once every request is answered, every work has ended and every Call has
// returned, flushes and closes.
// Notifications go on both ways until then.
//
// It returns nil once all is sent and the connection closed; if ctx ends
// first, it closes at once, as Close does, and returns ctx's error; if the
// connection closes for another reason first, that reason. Calling it again,
// or after Close, is safe. docs/design.md ("Shutdown") has the order.
func (c *Conn) Shutdown(ctx context.Context) error {
	if c.Err() != nil {
		_ = c.Close()
		return c.closedBeforeQuiet()
	}
	c.stopOnce.Do(c.beginShutdown)
	if err := c.awaitQuiet(ctx); err != nil {
		_ = c.Close()
		return err
	}
	select { // the requests read meanwhile have had their cancelled answers queued
	case <-c.intake.close():
	case <-ctx.Done():
		_ = c.Close()
		return ctx.Err()
	}
	c.closeFlushing(errClosedByShutdown, ctx)
	_ = c.Close() // waits for the connection's goroutines
	return ctx.Err()
}

// errClosedByShutdown is why a connection that Shutdown closed is closed.
var errClosedByShutdown error = statedError{"acprpc: connection closed by this side (Shutdown)", []error{ErrConnClosed, ErrShutdown}}

// beginShutdown stops new work and cancels what is in flight.
func (c *Conn) beginShutdown() {
	c.calls.drain() // first: a Call registered before it sees stopping
	for _, r := range c.incoming.drain() {
		r.cancelWith(ErrShutdown)
	}
	c.acp.shutdown()
	// Last: a handler whose call is cut short finds its own request
	// cancelled already, and is answered as cancelled.
	close(c.stopping)
}

// awaitQuiet waits until no request is in flight, no Call is waiting and no
// work is running. It returns ctx's error if ctx ends first, and the
// connection's if it closes first.
func (c *Conn) awaitQuiet(ctx context.Context) error {
	wait := func(ch <-chan struct{}) error {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return c.closedBeforeQuiet()
		}
	}
	if err := wait(c.incoming.emptied()); err != nil {
		return err
	}
	if err := wait(c.calls.drain()); err != nil {
		return err
	}
	return c.acp.quiet(wait)
}

// closedBeforeQuiet is Shutdown's error when the connection closed while it
// waited: nil if a Shutdown closed it, else the reason.
func (c *Conn) closedBeforeQuiet() error {
	if errors.Is(c.reason, ErrShutdown) {
		return nil
	}
	return c.reason
}

// intake is the read loop's gate. Shutdown closes it before its last
// flush: a message read after that is not taken in, so every request the
// connection took in has its answer queued before the flush, and none is
// read only to have its answer dropped by the close.
type intake struct {
	mu     sync.Mutex // protects the fields below
	closed bool
	active bool   // a message is being taken in
	idle   signal // fired when active ends
}

// enter reports whether the read loop may take a message in.
func (g *intake) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.active = true
	return true
}

func (g *intake) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active = false
	g.idle.fire()
}

// close takes no more messages in and returns a channel closed once the
// one being taken in, if any, has been.
func (g *intake) close() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if !g.active {
		return closedChan
	}
	return g.idle.wait()
}
