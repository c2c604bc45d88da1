package acprpc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldTransport is a peer that reads nothing until release is closed: every
// Send waits for it.
type heldTransport struct{ release chan struct{} }

func (h heldTransport) Recv() ([]byte, error) { <-h.release; return nil, ErrConnClosed }
func (h heldTransport) Send([]byte) error     { <-h.release; return nil }
func (h heldTransport) Close() error          { return nil }

// With the notifications' queue full, a notification waits for room, and an
// answer, a request or a cancel does not: each is queued at once, behind
// the notifications queued before it and ahead of any that waits.
func TestWriterAnswersDoNotWaitForNotificationRoom(t *testing.T) {
	peer := heldTransport{release: make(chan struct{})}
	opts := (&Options{MaxUnsentNotifications: 3}).settled()
	w := newWriter(peer, &opts, func(error) {})
	gone, stop := context.WithCancel(context.Background())
	stop() // a notification that must wait gives up at once
	note := func() *frame {
		f, err := requestFrame(nil, "x/note", nil)
		require.NoError(t, err)
		f.note = true
		return f
	}
	for range 3 {
		require.NoError(t, w.awaitNoteRoom(gone, 10))
		require.NoError(t, w.send(note()))
	}
	require.ErrorIs(t, w.awaitNoteRoom(gone, 10), errNoRoom, "a fourth notification found room")

	answer, err := resultFrame([]byte("1"), nil)
	require.NoError(t, err)
	require.NoError(t, w.sendNow(answer), "an answer")
	call, err := requestFrame([]byte("2"), "x/call", nil)
	require.NoError(t, err)
	require.NoError(t, w.sendNow(call), "a request")

	w.mu.Lock()
	// The writer goroutine holds a batch of the notifications, in Send.
	queue := append([]*frame(nil), w.queue...)
	w.mu.Unlock()
	notes, _ := w.unsent()
	assert.Equal(t, 3, notes, "the notifications being written count until they are")
	require.GreaterOrEqual(t, len(queue), 2)
	assert.Equal(t, []*frame{answer, call}, queue[len(queue)-2:], "the answer and the request queued at once, in order")
	for _, f := range queue[:len(queue)-2] {
		assert.True(t, f.note, "ahead of them, the notifications queued before")
	}
	close(peer.release)
	w.drain(context.Background())
}
