package main

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldOut is a stderr whose first write is held until released, as a pipe
// is while its reader is busy, and which counts its writes.
type heldOut struct {
	entered, release chan struct{}
	once             sync.Once

	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func newHeldOut() *heldOut {
	return &heldOut{entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *heldOut) Write(p []byte) (int, error) {
	h.once.Do(func() {
		close(h.entered)
		<-h.release
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writes++
	return h.buf.Write(p)
}

func (h *heldOut) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.String()
}

// The lines logged while a write is under way go out together in the next
// one, every line in the order written, and Flush returns once all are out.
func TestLogWriterBatchesWhatWaits(t *testing.T) {
	out := newHeldOut()
	w := newLogWriter(out)
	var want strings.Builder
	line := func(i int) {
		l := fmt.Sprintf("line %d\n", i)
		want.WriteString(l)
		n, err := w.Write([]byte(l))
		require.NoError(t, err)
		require.Equal(t, len(l), n)
	}
	line(0)
	<-out.entered // the first line's write is under way, and held
	for i := 1; i < 100; i++ {
		line(i)
	}
	close(out.release)
	w.Flush()
	assert.Equal(t, want.String(), out.String())
	assert.Equal(t, 2, out.writes, "the 99 lines that waited went out in one write")

	line(100) // the writer starts again after it ran dry
	w.Flush()
	assert.Equal(t, want.String(), out.String())
	assert.Equal(t, 3, out.writes)
}

// A stderr that nobody reads holds at most the limit and a line: past it, a
// line waits for the write under way, as a plain write would.
func TestLogWriterBoundsWhatWaits(t *testing.T) {
	out := newHeldOut()
	w := newLogWriter(out)
	w.limit = 1 << 10
	l := []byte(strings.Repeat("x", 99) + "\n")
	_, _ = w.Write(l)
	<-out.entered
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 30 { // three times the limit
			_, _ = w.Write(l)
		}
	}()
	for { // until the writing goroutine has filled what may wait
		w.mu.Lock()
		pending := len(w.pending)
		w.mu.Unlock()
		if pending >= w.limit {
			break
		}
		runtime.Gosched()
	}
	select {
	case <-done:
		t.Fatal("every line was taken while the write was held")
	default:
	}
	w.mu.Lock()
	assert.LessOrEqual(t, len(w.pending), w.limit+len(l))
	w.mu.Unlock()
	close(out.release)
	<-done
	w.Flush()
	assert.Len(t, out.String(), 31*len(l))
}
