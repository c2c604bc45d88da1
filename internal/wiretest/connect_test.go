package wiretest

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fatalNoted is a test whose Fatalf notes the message and ends the
// goroutine, as testing's does, so a test can watch the kit fail one.
type fatalNoted struct {
	testing.TB
	msg string
}

func (f *fatalNoted) Helper() {}

func (f *fatalNoted) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestConnectTakesOneWith(t *testing.T) {
	failed := &fatalNoted{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Connect(failed, Transports[0], nil, nil, With{Tapped: true}, With{})
	}()
	Recv(t, Context(t), done)
	assert.Equal(t, "wiretest: 2 Withs given, at most one is", failed.msg)
}

func TestZeroWithIsTheDefault(t *testing.T) {
	ctx := Context(t)
	c, p := Connect(t, Transports[0], Mux{"ping": Ping}, nil, With{})
	p.Request("1", "ping", "")
	p.ExpectResult(ctx, "1", `"pong"`)
	assert.Nil(t, p.tap, "untapped")
	assert.NoError(t, c.Err())
}
