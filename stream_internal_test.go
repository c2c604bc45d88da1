package acprpc

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamRecvHoldsThread: the read loop yields before a Recv only when
// that Recv would wait in a system call holding its thread, which a polled
// file never does, and never while a whole line is buffered.
func TestStreamRecvHoldsThread(t *testing.T) {
	t.Run("polled file", func(t *testing.T) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		assert.False(t, NewStreamPipes(r, w).recvHoldsThread())
	})
	t.Run("unpolled reader", func(t *testing.T) {
		r, w := io.Pipe()
		defer r.Close()
		s := NewStreamPipes(r, io.Discard)
		assert.True(t, s.recvHoldsThread(), "nothing buffered")
		go func() { _, _ = w.Write([]byte("{\"a\":1}\n{\"b\":2}\n{\"c\"")) }()
		msg, err := s.Recv()
		require.NoError(t, err)
		assert.Equal(t, `{"a":1}`, string(msg))
		assert.False(t, s.recvHoldsThread(), "a whole line is buffered")
		msg, err = s.Recv()
		require.NoError(t, err)
		assert.Equal(t, `{"b":2}`, string(msg))
		assert.True(t, s.recvHoldsThread(), "only part of a line is buffered")
	})
}
