package acprpc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A Call given no options allocates nothing for them: the copy of the
// defaults that the options reach escapes to the heap, so it is made only
// for a Call given some.
func TestCallOptionsAllocations(t *testing.T) {
	c := &Conn{opts: Options{WaitAfterCancel: time.Second}}
	opts := []CallOption{WaitAfterCancel(time.Minute)}
	var co callOptions
	assert.Zero(t, testing.AllocsPerRun(100, func() { co = c.callOptions(nil) }))
	assert.Equal(t, time.Second, co.waitAfterCancel)
	assert.Equal(t, float64(1), testing.AllocsPerRun(100, func() { co = c.callOptions(opts) }))
	assert.Equal(t, time.Minute, co.waitAfterCancel)
}
