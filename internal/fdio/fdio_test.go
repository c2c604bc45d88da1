package fdio

import (
	"bytes"
	"io"
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the runtime lets a transport do with each kind of reader or writer:
// a pipe's file and a network connection park a waiting goroutine and are
// cut short by their close; a plain buffer is neither, and a closer that is
// no file is taken at its word.
func TestPolledAndCloseInterrupts(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	for _, tc := range []struct {
		name                    string
		x                       any
		polled, closeInterrupts bool
	}{
		{"os.Pipe's file", w, true, true},
		{"a net.Conn", a, true, true},
		{"a bytes.Buffer", &bytes.Buffer{}, false, false},
		{"a closer that is no file", io.NopCloser(&bytes.Buffer{}), false, true},
	} {
		assert.Equal(t, tc.polled, Polled(tc.x), "Polled: %s", tc.name)
		assert.Equal(t, tc.closeInterrupts, CloseInterrupts(tc.x), "CloseInterrupts: %s", tc.name)
	}
}

// A write to a pipe nobody reads takes what the pipe holds and returns at
// once, without an error; a writer with no descriptor gets no NoWaitWriter.
func TestNoWaitWriter(t *testing.T) {
	if runtime.GOOS == "windows" {
		assert.Nil(t, NewNoWaitWriter(os.Stdout), "only Unix descriptors are written without waiting")
		return
	}
	assert.Nil(t, NewNoWaitWriter(&bytes.Buffer{}))
	r, w := pipe(t)
	nw := NewNoWaitWriter(w)
	require.NotNil(t, nw)
	big := make([]byte, 8<<20) // more than any pipe holds
	n, err := nw.TryWrite(big)
	require.NoError(t, err)
	assert.Positive(t, n)
	assert.Less(t, n, len(big), "the pipe took only what it holds")
	n, err = nw.TryWrite(big)
	require.NoError(t, err, "a full pipe is no error")
	assert.Zero(t, n)
	require.NoError(t, r.Close())
	_, err = nw.TryWrite(big)
	assert.Error(t, err, "a pipe whose reader has gone is")
}

// An input probe tells bytes waiting unread in a pipe, and nothing once a
// read has taken them; a reader with no descriptor has no probe.
func TestInputProbe(t *testing.T) {
	assert.Nil(t, NewInputProbe(&bytes.Buffer{}))
	r, w := pipe(t)
	p := NewInputProbe(r)
	if !canCountUnread {
		assert.Nil(t, p, "no probe where unread bytes cannot be counted")
		return
	}
	require.NotNil(t, p)
	assert.False(t, p.Waiting(), "nothing written yet")
	_, err := w.WriteString("{}\n")
	require.NoError(t, err)
	assert.True(t, p.Waiting())
	_, err = r.Read(make([]byte, 16))
	require.NoError(t, err)
	assert.False(t, p.Waiting(), "read")
}

// pipe returns the two ends of an os.Pipe, closed by the test's cleanup.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() {
		r.Close()
		w.Close()
	})
	return r, w
}
