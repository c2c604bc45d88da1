package wiretest

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

func TestPeerSeesEOFWhenConnCloses(t *testing.T) {
	Run(t, func(t *testing.T, tr Transport) {
		ctx := Context(t)
		c, p := Connect(t, tr, nil, nil)
		require.NoError(t, c.Close())
		_, err := p.Next(ctx)
		assert.ErrorIs(t, err, io.EOF)
	})
}

func TestNextIsBoundedByContext(t *testing.T) {
	_, p := Connect(t, Transports[0], nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Next(ctx)
	assert.True(t, errors.Is(err, context.Canceled), err)
}

func TestPeerDrainsAndSendsInBackground(t *testing.T) {
	ctx := Context(t)
	for _, read := range []bool{false, true} {
		c, p := Connect(t, Transports[0], Mux{"echo": Echo}, nil, With{Tapped: true})
		tap := p.Tap()
		if read {
			p.Request("0", "echo", "[0]")
			p.ExpectAnswer(ctx, "0")
		}
		var lines []string
		for i := 1; i <= 200; i++ {
			lines = append(lines, RequestLine(strings.Repeat("9", i%5+1), "echo", `"`+strings.Repeat("x", 1000)+`"`))
		}
		sent := p.SendAsync([]byte(strings.Join(lines, "\n") + "\n"))
		drained := p.Drain()
		require.NoError(t, Recv(t, ctx, sent))
		require.NoError(t, tap.Ledger().Await(ctx, func() bool { return tap.Ledger().Answers(AtoB) >= 200 }))
		require.NoError(t, c.Close())
		Recv(t, ctx, drained) // the end of the output
		_, err := p.Next(ctx)
		assert.True(t, err != nil && !errors.Is(err, context.DeadlineExceeded), "read %v", err)
	}
}

// Over an end that cannot close only its writing half, CloseWrite closes
// the whole end, which ends the Conn's input all the same.
func TestPeerCloseWriteWithoutHalfClose(t *testing.T) {
	ctx := Context(t)
	whole := Transport{Name: "net.Pipe, whole", Open: func() (acprpc.Transport, io.ReadWriteCloser, error) {
		a, b := net.Pipe()
		return acprpc.NewStream(a), b, nil
	}}
	c, p := Connect(t, whole, nil, nil)
	p.CloseWrite()
	Recv(t, ctx, c.Done())
	assert.ErrorIs(t, c.Err(), io.EOF)
}
