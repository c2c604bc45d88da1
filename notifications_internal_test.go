package acprpc

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The notification queue hands messages out in the order they came,
// through every compaction of its slice, keeps its slice within a few
// times what waits, reuses it once emptied, and lets go of what a flood
// grew.
func TestNotifierQueue(t *testing.T) {
	n := newNotifier(func(message) {}, nil)
	n.running = true // no loop: the test takes the messages itself
	pushed, taken := 0, 0
	push := func(k int) {
		for range k {
			n.mu.Lock()
			n.enqueue(message{Method: strconv.Itoa(pushed)})
			n.mu.Unlock()
			pushed++
		}
	}
	take := func(k int) {
		for range k {
			m, ok := n.next()
			require.True(t, ok)
			require.Equal(t, strconv.Itoa(taken), m.Method, "out of order")
			taken++
		}
	}

	// A steady backlog: three in, two out, many times over.
	for range 1000 {
		push(3)
		take(2)
		waiting := pushed - taken
		assert.LessOrEqual(t, cap(n.queue), 4*waiting+8, "the slice outgrew what waits")
	}
	take(pushed - taken)
	_, ok := n.next()
	assert.False(t, ok, "an empty queue ends the loop")

	// A flood longer than what is kept is let go once handled.
	n.running = true
	push(2 * keptQueue)
	take(2 * keptQueue)
	assert.Nil(t, n.queue, "a slice grown by a flood is let go once empty")

	// A trickle, one at a time, reuses one small slice.
	n.running = true
	push(1)
	take(1)
	require.NotNil(t, n.queue, "a small slice is kept")
	allocs := testing.AllocsPerRun(100, func() {
		n.running = true
		n.mu.Lock()
		n.enqueue(message{Method: "m"})
		n.mu.Unlock()
		if _, ok := n.next(); !ok {
			t.Fatal("nothing queued")
		}
	})
	assert.Zero(t, allocs)
}

// A response waits for the notifications read before it: its waiter wakes
// once, when the count it waits for is handled, not at each notification
// handled before that, and a waiter whose count is reached already does not
// wait at all.
func TestNotifierWakesAWaiterAtItsCount(t *testing.T) {
	gate := make(chan struct{})
	n := newNotifier(func(message) { <-gate }, nil)
	n.running = true // no loop of its own: the test runs it
	for range 3 {
		n.mu.Lock()
		n.enqueue(message{Method: "m"})
		n.queued++
		n.mu.Unlock()
	}
	loop := make(chan struct{})
	go func() { n.run(); close(loop) }()

	n.mu.Lock()
	third := n.reachedChan(3)
	n.mu.Unlock()
	for handled := 1; handled <= 2; handled++ {
		gate <- struct{}{}
		require.True(t, n.waitFor(uint64(handled), nil, nil))
		select {
		case <-third:
			t.Fatalf("the waiter for 3 woke at %d", handled)
		default:
		}
	}
	gate <- struct{}{}
	<-third
	<-loop
	assert.True(t, n.waitFor(3, nil, nil))
	assert.Empty(t, n.reached, "a count reached is forgotten")
}
