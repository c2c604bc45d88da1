package wiretest

import (
	"sync"

	"github.com/acpkit/acprpc"
)

// Tap stands between a Conn and its transport. It records every message
// the Conn sends in a Ledger before passing the message on, so that once
// the far end has read a message the ledger has it: a test that syncs on
// the far end never reads the ledger too early. It also counts the bytes
// the Conn asked to send, and can slip messages of its own in after the
// Conn's. What the Conn receives passes untouched.
type Tap struct {
	// Inject, when set before the first Send, is called after each
	// message recorded, with the Tap's ledger and direction; a message it
	// returns is sent next, and is not recorded: the injector accounts
	// for it, with Ledger.Owe if it owes an answer. A message holds no
	// newline.
	Inject func(l *Ledger, d Direction) []byte

	t acprpc.Transport
	l *Ledger
	d Direction

	mu        sync.Mutex
	attempted int64
	waiters   []bytesWaiter

	inputEnded chan struct{} // closed once Recv has failed
	endOnce    sync.Once
}

type bytesWaiter struct {
	n  int64
	ch chan struct{}
}

// newTap returns t tapped: what it sends is recorded in l as going the way
// d.
func newTap(t acprpc.Transport, l *Ledger, d Direction) *Tap {
	return &Tap{t: t, l: l, d: d, inputEnded: make(chan struct{})}
}

// Ledger is the ledger the Tap records into.
func (t *Tap) Ledger() *Ledger { return t.l }

// Recv receives from the transport.
func (t *Tap) Recv() ([]byte, error) {
	msg, err := t.t.Recv()
	if err != nil {
		t.endOnce.Do(func() { close(t.inputEnded) })
	}
	return msg, err
}

// InputEnded returns a channel closed once the Conn's input has ended: the
// transport's Recv has failed, for the Conn to see next.
func (t *Tap) InputEnded() <-chan struct{} { return t.inputEnded }

// Send records msg, then sends it, then any message Inject returns.
func (t *Tap) Send(msg []byte) error {
	t.count(len(msg) + 1) // and its line end, on a stream
	t.l.Record(t.d, msg)
	if err := t.t.Send(msg); err != nil {
		return err
	}
	if t.Inject == nil {
		return nil
	}
	if extra := t.Inject(t.l, t.d); extra != nil {
		return t.t.Send(extra)
	}
	return nil
}

// Close closes the transport.
func (t *Tap) Close() error { return t.t.Close() }

// SetReadLimit passes the Conn's limit on to a transport that takes one.
func (t *Tap) SetReadLimit(n int) {
	if l, ok := t.t.(interface{ SetReadLimit(int) }); ok {
		l.SetReadLimit(n)
	}
}

// Flush flushes a transport that buffers.
func (t *Tap) Flush() error {
	if f, ok := t.t.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

func (t *Tap) count(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.attempted += int64(n)
	t.wakeWaiters()
}

// Attempted returns how many bytes the Conn has asked to send, a line end
// counted for each message.
func (t *Tap) Attempted() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.attempted
}

// Past returns a channel closed once the Conn has asked to send at least n
// bytes in all, whether or not they could be sent.
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
