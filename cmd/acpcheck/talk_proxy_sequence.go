package main

import (
	"bytes"
	"slices"
	"sync"
	"time"
)

// sequencer numbers the lines of both directions in the order the proxy
// forwards them, and hands them on in that order. A direction reserves the
// numbers of the lines a chunk ends, and hands the lines over, before it
// writes the chunk on: whatever the peer sends in answer is read after the
// write, so it is numbered after its cause, and what was forwarded was
// recorded first.
type sequencer struct {
	mu      sync.Mutex
	start   time.Time
	next    int // the number the next line reserved gets
	handed  int // the last number handed on
	held    map[int]seqLine
	deliver func(seq int, ms float64, dir string, line []byte, size int)
	changed chan struct{} // closed and replaced at each line handed on
	ended   bool          // finish has run: lines handed over later are dropped
	// heldBytes is the length of the lines held.
	heldBytes int
}

// maxHeld is how many bytes of lines the sequencer holds for the lines
// numbered before them.
const maxHeld = 64 << 20

// seqLine is a line handed over before the lines numbered ahead of it.
type seqLine struct {
	ms   float64
	dir  string
	line []byte
	size int
}

func newSequencer(deliver func(seq int, ms float64, dir string, line []byte, size int)) *sequencer {
	return &sequencer{start: time.Now(), next: 1, held: map[int]seqLine{}, deliver: deliver, changed: make(chan struct{})}
}

// reserve numbers n lines, and says when they went.
func (q *sequencer) reserve(n int) (first int, ms float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	first = q.next
	q.next += n
	return first, float64(time.Since(q.start).Microseconds()) / 1000
}

// put hands over the line numbered seq; it is delivered once every line
// numbered before it has been.
//
// A line that must wait is held; while maxHeld bytes are held already, put
// waits for the lines before it (the other direction's write is blocked:
// an editor that stopped reading), which stops this direction's reading
// too, as a pipe between the two would, so that memory stays bounded.
func (q *sequencer) put(seq int, ms float64, dir string, line []byte, size int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for seq != q.handed+1 && q.heldBytes >= maxHeld && !q.ended {
		changed := q.changed
		q.mu.Unlock()
		<-changed
		q.mu.Lock()
	}
	if q.ended {
		return
	}
	defer q.wake()
	if seq != q.handed+1 {
		q.held[seq] = seqLine{ms: ms, dir: dir, line: bytes.Clone(line), size: size} // the caller reuses line
		q.heldBytes += len(line)
		return
	}
	q.deliver(seq, ms, dir, line, size)
	q.handed = seq
	for {
		l, ok := q.held[q.handed+1]
		if !ok {
			return
		}
		delete(q.held, q.handed+1)
		q.heldBytes -= len(l.line)
		q.handed++
		q.deliver(q.handed, l.ms, l.dir, l.line, l.size)
	}
}

func (q *sequencer) wake() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// finish waits up to d for every line numbered to be handed over, then
// hands on those still held, in order, passing over the numbers of lines
// not handed over by then; a line handed over later is dropped. A line can
// be numbered and not handed over while its chunk's write is blocked: the
// editor's, to an agent that stopped reading and exited, fails once the
// agent is gone (unless a process it left holds its stdin), and the lines
// of the agent's last words, numbered after it, wait for it.
func (q *sequencer) finish(d time.Duration) {
	deadline := time.After(d)
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.handed != q.next-1 {
		changed := q.changed
		q.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			q.mu.Lock()
			q.handOnHeld()
			return
		}
		q.mu.Lock()
	}
	q.ended = true
	q.wake() // a put waiting for room finds the sequence ended
}

// handOnHeld hands on the lines held, in order of their numbers, and ends
// the sequence.
func (q *sequencer) handOnHeld() {
	q.ended = true
	seqs := make([]int, 0, len(q.held))
	for seq := range q.held {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		l := q.held[seq]
		q.deliver(seq, l.ms, l.dir, l.line, l.size)
	}
	clear(q.held)
	q.heldBytes = 0
	q.wake()
}
