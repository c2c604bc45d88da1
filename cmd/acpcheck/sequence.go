package main

import (
	"bytes"
	"sync"
	"time"
)

// sequencer numbers the lines of both directions in the order the proxy
// forwards them, and hands them on in that order. A direction reserves the
// numbers of the lines a chunk ends before it writes the chunk on, and hands
// the lines over after: whatever the peer sends in answer is read after the
// write, so it is numbered after its cause, while the proxy does no more
// than count newlines before it forwards a byte.
type sequencer struct {
	mu      sync.Mutex
	start   time.Time
	next    int // the number the next line reserved gets
	handed  int // the last number handed on
	held    map[int]seqLine
	deliver func(seq int, ms float64, dir string, line []byte)
}

// seqLine is a line handed over before the lines numbered ahead of it.
type seqLine struct {
	ms   float64
	dir  string
	line []byte
}

func newSequencer(deliver func(seq int, ms float64, dir string, line []byte)) *sequencer {
	return &sequencer{start: time.Now(), next: 1, held: map[int]seqLine{}, deliver: deliver}
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
func (q *sequencer) put(seq int, ms float64, dir string, line []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if seq != q.handed+1 {
		q.held[seq] = seqLine{ms: ms, dir: dir, line: bytes.Clone(line)} // the caller reuses line
		return
	}
	q.deliver(seq, ms, dir, line)
	q.handed = seq
	for {
		l, ok := q.held[q.handed+1]
		if !ok {
			return
		}
		delete(q.held, q.handed+1)
		q.handed++
		q.deliver(q.handed, l.ms, l.dir, l.line)
	}
}
