package wiretest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTransportsConverse(t *testing.T) {
	Run(t, func(t *testing.T, tr Transport) {
		ctx := Context(t)
		_, p := Connect(t, tr, Mux{"echo": Echo}, nil)
		p.Request("1", "echo", `{"k":"v"}`)
		p.ExpectResult(ctx, "1", `{"k":"v"}`)
	})
}

func TestPipeCapacity(t *testing.T) {
	n := Transports[0].Capacity(t)
	assert.GreaterOrEqual(t, n, 4096)
	assert.Equal(t, n, Transports[0].Capacity(t), "the same each time")
}

func TestCapacityOnlyWhereKnown(t *testing.T) {
	msg := fatalOf(t, func(t testing.TB) { Transports[1].Capacity(t) })
	assert.Equal(t, "wiretest: net.Pipe has no known capacity", msg)
}
