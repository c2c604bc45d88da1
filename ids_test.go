package acprpc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// ID tests: which string IDs are one request and which are two.

// String IDs that differ only in what cannot be decoded to text (lone
// surrogate escapes, bytes that are not UTF-8) are different requests, so a
// cancel for one never reaches the other; spellings of the same text are
// one ID, so a cancel spelled differently still finds its request.
func TestIDsInvalidTextStaysDistinct(t *testing.T) {
	pairs := []struct {
		name      string
		a, b      string // two IDs in flight at once
		aSpelling string // another spelling of a, for its cancel
	}{
		{"lone surrogates", `"\ud800"`, `"\udfff"`, `"\uD800"`},
		{"a lone surrogate and U+FFFD", `"x\ud800"`, `"x\ufffd"`, `"\u0078\ud800"`},
		{"a lone surrogate and its bytes", `"\udc00"`, "\"\xed\xb0\x80\"", `"\uDC00"`},
		{"bytes that are not UTF-8", "\"\xff\"", "\"\xfe\"", "\"\xff\""},
		{"bad bytes and U+FFFD", "\"\xff\"", "\"\xef\xbf\xbd\"", "\"\xff\""},
		{"a pair and its halves apart", `"\ud83d\ude00"`, `"\ud83d\u0020\ude00"`, "\"\xf0\x9f\x98\x80\""},
	}
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		started := make(chan string, 2)
		_, p := wiretest.Connect(t, tr, wiretest.Mux{
			"x/hold": func(ctx context.Context, req *acprpc.Request) (any, error) {
				started <- req.ID.String()
				<-ctx.Done()
				return nil, context.Cause(ctx)
			},
		}, nil)
		for _, pc := range pairs {
			p.Request(pc.a, "x/hold", "")
			assert.Equal(t, pc.a, wiretest.Recv(t, ctx, started), pc.name)
			p.Request(pc.b, "x/hold", "")
			assert.Equal(t, pc.b, wiretest.Recv(t, ctx, started), "%s: %s is taken for %s", pc.name, pc.b, pc.a)

			p.Cancel(pc.b)
			m := p.Expect(ctx)
			require.Equal(t, pc.b, string(m.ID), "%s: the cancel for %s answered %s", pc.name, pc.b, m.Raw)
			assert.EqualValues(t, acprpc.CodeRequestCancelled, m.Code())
			p.Cancel(pc.aSpelling)
			m = p.Expect(ctx)
			require.Equal(t, pc.a, string(m.ID), "%s: the cancel spelled %s answered %s", pc.name, pc.aSpelling, m.Raw)
			assert.EqualValues(t, acprpc.CodeRequestCancelled, m.Code())
		}
	})
}
