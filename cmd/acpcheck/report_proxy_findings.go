package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// findingQueue is how many findings the proxy holds for its stderr: more,
// while stderr is full, are counted and dropped.
const findingQueue = 1024

// findingsBound is how long the proxy's end waits for its findings and its
// last words to be written to stderr.
const findingsBound = 2 * time.Second

// findingWriter writes the proxy's findings to stderr from a goroutine of
// its own, so that a stderr nobody reads never holds up forwarding: report
// only queues, and drops (counting) what does not fit.
type findingWriter struct {
	w     io.Writer
	queue chan string
	done  chan struct{}

	mu      sync.Mutex
	found   int // findings reported
	dropped int // of them, not written
	said    int // of the dropped, those said so on stderr
}

func newFindingWriter(w io.Writer, size int) *findingWriter {
	f := &findingWriter{w: w, queue: make(chan string, size), done: make(chan struct{})}
	go f.write()
	return f
}

// report queues a finding, never waiting.
func (f *findingWriter) report(v violation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.found++
	select {
	case f.queue <- fmt.Sprintf("acpcheck: the %s broke %s (a %s of %s): %s; lines %v\n", v.Side, v.Rule.ID, v.Rule.Tier, v.Rule.Spec, v.Detail, v.Lines):
	default:
		f.dropped++
	}
}

func (f *findingWriter) write() {
	defer close(f.done)
	for s := range f.queue {
		if n := f.unsaid(); n > 0 {
			fmt.Fprintf(f.w, "acpcheck: %d findings were not written: stderr was full (the editor does not read it); the record keeps the conversation for acpcheck report\n", n)
		}
		_, _ = io.WriteString(f.w, s)
	}
}

// unsaid is how many findings were dropped since stderr last said so.
func (f *findingWriter) unsaid() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.dropped - f.said
	f.said = f.dropped
	return n
}

// close writes the findings still queued and the conversation's end, if
// why is not empty, waiting up to bound for stderr to take them.
func (f *findingWriter) close(why string, bound time.Duration) {
	f.mu.Lock()
	last := ""
	if why != "" {
		last = fmt.Sprintf("acpcheck: the conversation ended: %s; %d findings", why, f.found)
		if f.dropped > 0 {
			last += fmt.Sprintf(", %d of them not written: stderr was full", f.dropped)
		}
		last += "\n"
	}
	f.mu.Unlock()
	if last != "" {
		select {
		case f.queue <- last:
		case <-time.After(bound):
		}
	}
	close(f.queue)
	select {
	case <-f.done:
	case <-time.After(bound):
	}
}
