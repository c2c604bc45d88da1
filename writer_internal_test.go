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

// queueingTransport takes every message at once, as an HTTP server's queue
// does, and keeps the notifications handed to SendNotification until the
// test lets them go.
type queueingTransport struct {
	sent    chan []byte
	written func(n, size int)
}

func (q *queueingTransport) Recv() ([]byte, error) { select {} }
func (q *queueingTransport) Send(msg []byte) error {
	q.sent <- append([]byte(nil), msg...)
	return nil
}
func (q *queueingTransport) SendNotification(msg []byte, written func(n, size int)) error {
	q.written = written // the same every time; read by the test after the sends it waited for
	return q.Send(msg)
}
func (q *queueingTransport) Close() error { return nil }

// A transport that queues the Conn's notifications (SendNotification) has
// them counted as unsent until it says they were written: Notify waits at
// the limit though the transport took every one, room comes only with
// written, and answers go through Send, never held.
func TestWriterCountsNotificationsTheTransportQueuesUntilWritten(t *testing.T) {
	q := &queueingTransport{sent: make(chan []byte, 10)}
	opts := (&Options{MaxUnsentNotifications: 2}).settled()
	w := newWriter(q, &opts, func(error) {})
	gone, stop := context.WithCancel(context.Background())
	stop()
	for range 2 {
		require.NoError(t, w.awaitNoteRoom(gone, 10))
		f, err := requestFrame(nil, "x/note", nil)
		require.NoError(t, err)
		f.note = true
		require.NoError(t, w.send(f))
		<-q.sent
	}
	require.ErrorIs(t, w.awaitNoteRoom(gone, 10), errNoRoom, "the transport's queue did not count")
	notes, size := w.unsent()
	assert.Equal(t, 2, notes)

	answer, err := resultFrame([]byte("1"), nil)
	require.NoError(t, err)
	require.NoError(t, w.sendNow(answer))
	assert.Contains(t, string(<-q.sent), `"id":1`, "the answer went through Send at once")

	q.written(1, size/2)
	require.NoError(t, w.awaitNoteRoom(gone, 10), "room once the transport wrote one")
	q.written(1, size-size/2)
	notes, size = w.unsent()
	assert.Zero(t, notes)
	assert.Zero(t, size)
	w.drain(context.Background())
}
