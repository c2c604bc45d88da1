package wiretest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// writerFunc is an output made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
func (f writerFunc) Close() error                { return nil }

func TestFailAfter(t *testing.T) {
	var out bytes.Buffer
	w := &failAfter{w: writerFunc(out.Write), left: 5}
	n, err := w.Write([]byte("abc"))
	assert.Equal(t, 3, n)
	assert.NoError(t, err)
	n, err = w.Write([]byte("defg"))
	assert.Equal(t, 2, n)
	assert.ErrorIs(t, err, errBrokenOutput)
	_, err = w.Write([]byte("h"))
	assert.ErrorIs(t, err, errBrokenOutput)
	assert.Equal(t, "abcde", out.String())
	assert.NoError(t, w.Close())
}
