package acprpc_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
	"github.com/acpkit/acprpc/sourcegraph"
)

// Over-long message tests: a message over MaxMessageSize is dropped without
// being held, and still answered with its ID, or fails our call it answers,
// wherever in the message its "id" is.

// tlPad is a JSON string of n bytes of padding.
func tlPad(n int) string { return `"` + strings.Repeat("x", n) + `"` }

// tlSizes are over-long paddings: within one read of the Stream, and over
// many reads.
var tlSizes = []int{2000, 300 << 10}

// An over-long answer fails its call wherever its "id" is: JSON does not
// order members, and a peer may well write the result first.
func TestTooLargeAnswerWithIDAfterItsResult(t *testing.T) {
	const limit = 1000
	answers := []func(id, pad string) string{
		func(id, pad string) string {
			return `{"jsonrpc":"2.0","result":{"content":` + pad + `},"id":` + id + `}`
		},
		func(id, pad string) string {
			return `{"error":{"code":1,"message":` + pad + `},"jsonrpc":"2.0","id":` + id + `}`
		},
		func(id, pad string) string { return `{"jsonrpc":"2.0","result":` + pad + `,"\u0069d":` + id + `}` },
		func(id, pad string) string {
			return `{"jsonrpc":"2.0","result":{"id":"not this one","x":[` + pad + `]}, "id" : ` + id + ` }`
		},
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, tr, nil, &acprpc.Options{MaxMessageSize: limit})
		for _, size := range tlSizes {
			for i, answer := range answers {
				done := make(chan error, 1)
				go func() { done <- c.Call(ctx, "peer/big", nil, nil) }()
				req := p.ExpectRequest(ctx, "peer/big")
				p.Send(answer(string(req.ID), tlPad(size)))
				err := wiretest.Recv(t, ctx, done)
				var rpcErr *acprpc.Error
				require.ErrorAs(t, err, &rpcErr, "answer %d of %d bytes", i, size)
				assert.EqualValues(t, acprpc.CodeInternalError, rpcErr.Code)
				assert.Contains(t, rpcErr.Message, "too large")
			}
		}
		assert.Zero(t, c.Stats().OutgoingInFlight)
	})
}

// An over-long request is answered -32600 with its top-level ID, wherever it
// is; an "id" nested in params or inside a string is not the request's.
func TestTooLargeRequestIDAnywhere(t *testing.T) {
	const limit = 1000
	lines := []struct {
		line func(pad string) string
		id   string // the ID the -32600 carries
	}{
		{func(pad string) string {
			return `{"jsonrpc":"2.0","method":"echo","params":{"pad":` + pad + `},"id":"after"}`
		}, `"after"`},
		{func(pad string) string {
			return `{"id":1,"jsonrpc":"2.0","method":"echo","params":{"pad":` + pad + `}}`
		}, `1`},
		{func(pad string) string {
			return `{"jsonrpc":"2.0","method":"echo","params":[` + pad + `,{"id":5}],"\u0069\u0064":-7}`
		}, `-7`},
		{func(pad string) string {
			return `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"pad":` + pad + `},"id":2}`
		}, `2`},
		{func(pad string) string {
			return `{"jsonrpc":"2.0","method":"echo","params":{"id":3,"pad":` + pad + `,"s":"\",\"id\":4"}}`
		}, `null`},
		{func(pad string) string {
			return `{"jsonrpc":"2.0","method":"echo","params":{"pad":` + pad + `},"id":1.5}`
		}, `null`},
		{func(pad string) string {
			return `{"jsonrpc":"2.0","method":"echo","params":{"pad":` + pad + `},"id":{"x":1}}`
		}, `null`},
		{func(pad string) string { return `[{"jsonrpc":"2.0","id":1,"method":"echo","params":` + pad + `}]` }, `null`},
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		_, p := wiretest.Connect(t, tr, wiretest.Mux{"echo": wiretest.Echo}, &acprpc.Options{MaxMessageSize: limit})
		for _, size := range tlSizes {
			for _, l := range lines {
				p.Send(l.line(tlPad(size)))
				m := p.ExpectError(ctx, l.id, acprpc.CodeInvalidRequest)
				assert.Contains(t, m.Error.Message, "exceeds the limit")
			}
		}
		p.Request("9", "echo", "[9]")
		p.ExpectResult(ctx, "9", "[9]")
	})
}

// The "\r" of a CRLF line end is framing, like the "\n": a line of exactly
// MaxMessageSize bytes before its "\r\n" is accepted, also when the "\r"
// is the last byte of one read and the "\n" the first of the next.
func TestTooLargeCRLFLineOfExactlyTheLimit(t *testing.T) {
	line := func(id string, size int) string {
		head := `{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":[`
		l := head + tlPad(size-len(head)-len(`""]}`)) + `]}`
		require.Len(t, l, size)
		return l
	}
	for _, limit := range []int{1000, 64<<10 - 1} { // 64 KiB - 1: the "\r" ends the Stream's first read
		wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
			ctx := wiretest.Context(t)
			_, p := wiretest.Connect(t, tr, wiretest.Mux{"echo": wiretest.Echo}, &acprpc.Options{MaxMessageSize: limit})
			p.SendRaw(line("1", limit) + "\r\n")
			m := p.ExpectAnswer(ctx, "1")
			assert.Nil(t, m.Error, "a CRLF line of exactly the limit: %.200s", m.Raw)
			p.SendRaw(line("2", limit+1) + "\r\n")
			p.ExpectError(ctx, "2", acprpc.CodeInvalidRequest)
			p.SendRaw(line("3", limit) + "\r\r\n")
			assert.Nil(t, p.ExpectAnswer(ctx, "3").Error)
		}, wiretest.Streams...)
	}
}

// A transport with no size limit of its own hands the Conn an over-long
// message whole; the Conn answers it like the Stream's, with the ID found
// anywhere in it.
func TestTooLargeFromATransportWithoutLimit(t *testing.T) {
	ctx := wiretest.Context(t)
	a, b := net.Pipe()
	s := jsonrpc2.NewPlainObjectStream(b)
	c := acprpc.NewConn(context.Background(), sourcegraph.Transport(jsonrpc2.NewPlainObjectStream(a)), wiretest.Mux{"echo": wiretest.Echo},
		&acprpc.Options{MaxMessageSize: 1000})
	t.Cleanup(func() {
		_ = c.Close()
		_ = s.Close()
	})
	send := func(line string) {
		go func() { _ = s.WriteObject(jsonRaw(line)) }()
	}
	read := func() wiretest.Msg {
		var raw jsonRaw
		require.NoError(t, s.ReadObject(&raw))
		m, err := wiretest.Parse(string(raw))
		require.NoError(t, err)
		return m
	}
	send(`{"jsonrpc":"2.0","method":"echo","params":{"pad":` + tlPad(5000) + `},"id":"late"}`)
	m := read()
	assert.Equal(t, `"late"`, string(m.ID))
	assert.EqualValues(t, acprpc.CodeInvalidRequest, m.Code())

	done := make(chan error, 1)
	go func() { done <- c.Call(ctx, "peer/big", nil, nil) }()
	req := read()
	send(`{"jsonrpc":"2.0","result":` + tlPad(5000) + `,"id":` + string(req.ID) + `}`)
	err := wiretest.Recv(t, ctx, done)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "too large")
}

// jsonRaw is a message as the object stream carries it, undecoded.
type jsonRaw []byte

func (r jsonRaw) MarshalJSON() ([]byte, error) { return r, nil }

func (r *jsonRaw) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}
