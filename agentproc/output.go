package agentproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// exitDrain is how long the connection and the stderr copy go on reading
// the agent's output once the agent has exited. A child of the agent that
// outlives it may hold its stdout and stderr open: the reads end then all
// the same.
const exitDrain = 250 * time.Millisecond

// quietGap and maxExitTail bound the reads that exitDrain cuts short: what
// is already in the pipe is still read, until nothing comes for quietGap, or
// maxExitTail has passed (a child of the agent writing on and on).
const (
	quietGap    = 20 * time.Millisecond
	maxExitTail = time.Second
)

// exitCut is when the reads of an agent's output were cut after its exit.
type exitCut struct {
	mu sync.Mutex
	at time.Time // zero until the cut
}

func (c *exitCut) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = time.Now()
}

// done reports whether the cut has come.
func (c *exitCut) done() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.at.IsZero()
}

// arm sets f's deadline for a read after the cut, and reports whether the
// cut has come: such a read takes what the pipe holds and ends once it has
// been quiet for quietGap.
func (c *exitCut) arm(f *os.File) bool {
	c.mu.Lock()
	at := c.at
	c.mu.Unlock()
	if at.IsZero() {
		return false
	}
	deadline := time.Now().Add(quietGap)
	if time.Since(at) > maxExitTail {
		deadline = time.Now()
	}
	_ = f.SetReadDeadline(deadline)
	return true
}

// after waits for done, or for drained to end first: then the drain after
// the agent's exit is over, a read of f in progress ends, and after
// reports true.
func (c *exitCut) after(done, drained <-chan struct{}, f *os.File) bool {
	select {
	case <-done:
		return false
	case <-drained:
		c.cut()
		_ = endRead(f)
		return true
	}
}

// endRead ends a read of f in progress at once: through a deadline, or, on
// a system where a pipe takes none, by closing f.
func endRead(f *os.File) error {
	if f.SetReadDeadline(time.Now()) != nil {
		return f.Close()
	}
	return nil
}

// agentOutput is the agent's stdout as the connection reads it. Closing it
// ends a read in progress without closing the pipe, which Close goes on
// draining until the agent exits: a pipe closed under a writing agent would
// kill it with SIGPIPE. Once the agent has exited, its reads end with the
// exit, even if a child of the agent still holds the pipe.
type agentOutput struct {
	f       *os.File
	dead    <-chan struct{} // closed once the agent has been reaped
	exitErr func() error    // valid once dead is closed

	mu        sync.Mutex
	cut       bool    // the connection reads no more
	afterExit exitCut // the drain after the agent's exit is over
	reading   sync.WaitGroup

	endOnce sync.Once
	ended   chan struct{} // closed once the connection's reading is over
}

func (r *agentOutput) Read(b []byte) (int, error) {
	r.mu.Lock()
	if r.cut {
		r.mu.Unlock()
		return 0, io.EOF
	}
	r.reading.Add(1)
	r.mu.Unlock()
	defer r.reading.Done()
	for {
		gapped := r.arm()
		n, err := r.f.Read(b)
		if err == nil {
			return n, nil
		}
		if !gapped && r.afterExit.done() && errors.Is(err, os.ErrDeadlineExceeded) && !r.isCut() {
			continue // a read the exit's cut interrupted: read what the pipe still holds
		}
		r.end()
		return n, r.why(err)
	}
}

// arm prepares a read after the exit's cut, unless the connection has cut
// its reads itself.
func (r *agentOutput) arm() bool {
	if r.isCut() {
		return false
	}
	return r.afterExit.arm(r.f)
}

func (r *agentOutput) isCut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut
}

// why turns the end of the pipe into the agent's exit, when that is what
// ended it.
func (r *agentOutput) why(err error) error {
	switch {
	case errors.Is(err, io.EOF):
		// The agent's exit usually comes with the end of its stdout, and
		// is reaped a moment later. An agent that closed its stdout and
		// runs on leaves the connection ended by EOF. The reaping, not
		// Exited, is waited for: a child of the agent holding its stderr
		// keeps Exited open for as long as that wait.
		if err := awaitExit(r.dead, r.exitErr); err != nil {
			return err
		}
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed):
		if r.afterExit.done() {
			return r.exitErr()
		}
	}
	return err
}

func (r *agentOutput) end() { r.endOnce.Do(func() { close(r.ended) }) }

// Close ends the connection's reads: a read in progress returns at once.
// On a system where a pipe takes no deadline, the pipe is closed instead.
func (r *agentOutput) Close() error {
	r.mu.Lock()
	r.cut = true
	r.mu.Unlock()
	r.end()
	return endRead(r.f)
}

// endAfterExit ends the connection's reading, once the agent has exited,
// when drained ends before the pipe does.
func (r *agentOutput) endAfterExit(drained <-chan struct{}) {
	_ = r.afterExit.after(r.ended, drained, r.f)
}

// drain reads and discards the rest of the output, once the connection's
// last read has returned, until the pipe ends or is closed.
func (r *agentOutput) drain() {
	r.reading.Wait()
	if r.f.SetReadDeadline(time.Time{}) != nil {
		return // closed already
	}
	_, _ = io.Copy(io.Discard, r.f)
}

// awaitExit waits up to exitDrain for the agent to be reaped, and returns
// its exit as the connection's end, or nil if it runs on.
func awaitExit(dead <-chan struct{}, exitErr func() error) error {
	t := time.NewTimer(exitDrain)
	defer t.Stop()
	select {
	case <-dead:
		return exitErr()
	case <-t.C:
		return nil
	}
}

// agentInput is the agent's stdin as the connection writes it. A write
// that fails because the agent has exited (a broken pipe: it exited before
// it read what was sent) fails with the agent's exit, so that the
// connection ends with it, as it does when the end of stdout comes first.
// It is no *os.File, so the connection writes it on its writer goroutine;
// a client of a subprocess can spare the microseconds that costs.
type agentInput struct {
	f       *os.File
	dead    <-chan struct{}
	exitErr func() error
}

func (w *agentInput) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if err != nil && !errors.Is(err, os.ErrClosed) {
		if exit := awaitExit(w.dead, w.exitErr); exit != nil {
			return n, fmt.Errorf("%w; writing to its stdin: %w", exit, err)
		}
	}
	return n, err
}

func (w *agentInput) Close() error { return w.f.Close() }
