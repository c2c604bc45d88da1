package wiretest

import (
	"bytes"
	"io"
	"sync"
)

// Tap stands between a Conn (or a relay) and its output. It records every
// line written through it in a Ledger before passing the line on, so that
// once the far end has read a line the ledger has it: a test that syncs on
// the far end never reads the ledger too early. It also counts the bytes it
// was asked to write, and can slip lines of its own in between.
type Tap struct {
	// Inject, when set before the first write, is called after each line
	// recorded, with the Tap's ledger and direction; a line it returns
	// (with its "\n") is written next, and is not recorded: the injector
	// accounts for it, with Ledger.Owe if it owes an answer.
	Inject Injector

	w io.WriteCloser
	l *Ledger
	d Direction

	mu        sync.Mutex
	partial   []byte // the start of a line whose end has not come yet
	attempted int64
	waiters   []bytesWaiter
}

// Injector makes the lines a Tap slips in; see Tap.Inject.
type Injector func(l *Ledger, d Direction) []byte

type bytesWaiter struct {
	n  int64
	ch chan struct{}
}

// NewTap returns a Tap writing to w and recording into l as lines that went
// the way d.
func NewTap(w io.WriteCloser, l *Ledger, d Direction) *Tap {
	return &Tap{w: w, l: l, d: d}
}

// Ledger is the ledger the Tap records into.
func (t *Tap) Ledger() *Ledger { return t.l }

// Write records the lines p completes, then writes p, with any injected
// lines after the lines they follow. It returns how much of p was written.
func (t *Tap) Write(p []byte) (int, error) {
	written := 0
	for _, c := range t.take(p) {
		n, err := t.w.Write(c.b)
		if !c.injected {
			written += n
		}
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// Close closes the output.
func (t *Tap) Close() error { return t.w.Close() }

type chunk struct {
	b        []byte
	injected bool
}

// take counts and records what p brings and returns what to write.
func (t *Tap) take(p []byte) []chunk {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.attempted += int64(len(p))
	t.wakeWaiters()
	var out []chunk
	start, from := 0, 0 // start of the current line in p; start of what is not yet in out
	for {
		i := bytes.IndexByte(p[start:], '\n')
		if i < 0 {
			break
		}
		end := start + i + 1
		if len(t.partial) > 0 {
			t.partial = append(t.partial, p[start:end]...)
			t.l.Record(t.d, t.partial)
			t.partial = t.partial[:0]
			if cap(t.partial) > 1<<20 {
				t.partial = nil // do not pin a huge line's buffer
			}
		} else {
			t.l.Record(t.d, p[start:end])
		}
		start = end
		if t.Inject == nil {
			continue
		}
		if extra := t.Inject(t.l, t.d); extra != nil {
			out = append(out, chunk{b: p[from:end]}, chunk{b: extra, injected: true})
			from = end
		}
	}
	t.partial = append(t.partial, p[start:]...)
	if from < len(p) {
		out = append(out, chunk{b: p[from:]})
	}
	return out
}

// Attempted returns how many bytes the Tap has been asked to write.
func (t *Tap) Attempted() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.attempted
}

// Past returns a channel closed once the Tap has been asked to write at
// least n bytes in all, whether or not they could be written.
func (t *Tap) Past(n int64) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := bytesWaiter{n: n, ch: make(chan struct{})}
	t.waiters = append(t.waiters, w)
	t.wakeWaiters()
	return w.ch
}

func (t *Tap) wakeWaiters() {
	kept := t.waiters[:0]
	for _, w := range t.waiters {
		if t.attempted >= w.n {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	t.waiters = kept
}
