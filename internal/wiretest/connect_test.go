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

// fatalOf runs f on a goroutine of its own, as a test, and returns the
// message with which f failed it ("" if f did not).
func fatalOf(t *testing.T, f func(t testing.TB)) string {
	failed := &fatalNoted{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(failed)
	}()
	Recv(t, Context(t), done)
	return failed.msg
}

func TestConnectTakesOneWith(t *testing.T) {
	msg := fatalOf(t, func(t testing.TB) { Connect(t, Transports[0], nil, nil, With{Tapped: true}, With{}) })
	assert.Equal(t, "wiretest: 2 Withs given, at most one is", msg)
}

func TestZeroWithIsTheDefault(t *testing.T) {
	ctx := Context(t)
	c, p := Connect(t, Transports[0], Mux{"ping": Ping}, nil, With{})
	p.Request("1", "ping", "")
	p.ExpectResult(ctx, "1", `"pong"`)
	assert.Nil(t, p.tap, "untapped")
	assert.NoError(t, c.Err())
}

func TestTransportThatOpensNothing(t *testing.T) {
	msg := fatalOf(t, func(t testing.TB) { Connect(t, Transport{Name: "nothing"}, nil, nil) })
	assert.Equal(t, "wiretest: open nothing: it sets neither Open nor OpenMessages", msg)
}
