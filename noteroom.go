package acprpc

import (
	"context"
	"errors"
	"sync"
	"time"
)

// awaitNoteRoom returns once a notification of size bytes may be queued:
// fewer than the limit of this side's notifications, and of their bytes,
// wait to be written (counting the batch being written), or none do, so
// that a notification of any allowed size gets through; and the peer's
// input does not wait unread (inputFirst), or has for UnreadInputWait. It
// returns errNoRoom as soon as ctx ends, blocked or not, and the writer's
// error once it has stopped. Answers, requests and cancels never come
// here: only notifications wait for room, so a peer that stops reading
// holds this side's memory to the limit, and a turn producing updates to
// the pace the peer reads them.
//
// The calls that wait are woken in the order they came, as many as there
// is room for: a hundred turns streaming at once on one connection would
// otherwise all wake at every batch written, for a few to find room.
//
// ctx.Done is called only to wait: a handler's context makes its channel
// on the first call, which a notification that finds room is spared.
func (w *writer) awaitNoteRoom(ctx context.Context, size int) error {
	w.mu.Lock()
	for w.err == nil && w.mustWait(size) {
		woken := wakes.Get().(chan struct{})
		w.noteWaiters = append(w.noteWaiters, woken)
		held := w.inputFirst.Load()
		w.mu.Unlock()
		ok := w.waitForRoom(ctx, woken, held)
		wakes.Put(woken) // out of the queue, and empty: nobody sends to it again
		if !ok {
			return errNoRoom
		}
		w.mu.Lock()
	}
	err := w.err
	w.mu.Unlock()
	return err
}

// mustWait reports whether a notification of size bytes must wait before
// it is queued; w.mu is held.
func (w *writer) mustWait(size int) bool {
	full := w.notes > 0 && (w.notes >= w.noteLimit || w.notesSize+size > w.noteBytes)
	return full || w.inputFirst.Load()
}

// waitForRoom waits until woken, or ctx ends (false), or, held for the
// peer's input, Options.UnreadInputWait has passed, after which the
// notifications held go. A waiter that stops waiting unwoken leaves the
// queue; one woken as it stopped passes its wake on.
func (w *writer) waitForRoom(ctx context.Context, woken chan struct{}, held bool) bool {
	var timeout <-chan time.Time
	if held {
		t := time.NewTimer(w.unreadWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-woken:
		return true
	case <-timeout:
		w.mu.Lock()
		w.inputFirst.Store(false)
		w.leaveNoteWaiters(woken)
		w.roomMade()
		w.mu.Unlock()
		return true
	case <-ctx.Done():
		w.mu.Lock()
		w.leaveNoteWaiters(woken)
		w.mu.Unlock()
		return false
	}
}

// leaveNoteWaiters takes woken out of the queue, or, if it was woken
// already, takes the wake and wakes the next in its place; w.mu is held.
func (w *writer) leaveNoteWaiters(woken chan struct{}) {
	for i, ch := range w.noteWaiters {
		if ch == woken {
			w.noteWaiters = append(w.noteWaiters[:i], w.noteWaiters[i+1:]...)
			return
		}
	}
	select {
	case <-woken:
		w.wakeNoteWaiters(1)
	default:
	}
}

// wakes are the channels a waiting Notify call is woken on, each with room
// for its one wake, kept for the next wait.
var wakes = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

// roomMade wakes whoever waits for room: the reader, and as many waiting
// Notify calls as there is room for (every one once the writer has
// stopped). One held back for the peer's input finds it so again, and waits
// on with its bound; w.mu is held.
func (w *writer) roomMade() {
	w.room.fire()
	if w.err != nil {
		w.wakeNoteWaiters(len(w.noteWaiters))
		return
	}
	w.wakeNoteWaiters(max(w.noteLimit-w.notes, 1))
}

// wakeNoteWaiters wakes the first n waiting Notify calls; w.mu is held.
// The others move to the front, so that the queue keeps its array: a
// stream that waits at every batch allocates nothing for it.
func (w *writer) wakeNoteWaiters(n int) {
	n = min(n, len(w.noteWaiters))
	for _, ch := range w.noteWaiters[:n] {
		ch <- struct{}{}
	}
	left := copy(w.noteWaiters, w.noteWaiters[n:])
	clear(w.noteWaiters[left:])
	w.noteWaiters = w.noteWaiters[:left]
}

// peerWrote reports whether the peer's input waits unread, asking the
// transport at most once every probeEvery: a turn streaming updates writes
// tens of thousands of batches a second, and the question is a system call.
func (w *writer) peerWrote() bool {
	if w.unread == nil {
		return false
	}
	now := time.Now()
	if now.Sub(w.probed) < probeEvery {
		return false
	}
	w.probed = now
	return w.unread()
}

// probeEvery is the least time between two questions of peerWrote.
const probeEvery = 50 * time.Microsecond

// inputRead is told by the reader that it has taken in a message: the
// notifications held back for the input may go.
func (w *writer) inputRead() {
	if w.inputFirst.Load() {
		w.mu.Lock()
		w.inputFirst.Store(false)
		w.roomMade()
		w.mu.Unlock()
	}
}

// errNoRoom is awaitNoteRoom's report that its caller gave up waiting.
var errNoRoom = errors.New("acprpc: gave up waiting for room in the write queue")
