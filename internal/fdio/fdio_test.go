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
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
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
