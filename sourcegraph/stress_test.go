package sourcegraph_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/wiretest"
	"github.com/acpkit/acprpc/sourcegraph"
)

// Requests whose handlers reply once, twice, never, or only once cancelled,
// half of them cancelled right behind them, all at once: each is answered
// exactly once, and nothing else comes back.
func TestStressExactlyOnce(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 400
	}
	ctx := wiretest.Context(t)
	h := mux{"work": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
		runtime.Gosched() // let the cancel race the reply
		switch r.ID.Num % 4 {
		case 0:
			_ = c.Reply(ctx, r.ID, "done")
		case 1:
			_ = c.Reply(ctx, r.ID, "first")
			_ = c.Reply(ctx, r.ID, "second")
		case 2: // returns without replying
		case 3:
			select {
			case <-ctx.Done():
			case <-time.After(time.Millisecond):
			}
			_ = c.ReplyWithError(context.Background(), r.ID, &jsonrpc2.Error{Code: -32000, Message: "stopped"})
		}
	}}
	p := serve(t, h, &sourcegraph.Options{CancelGrace: 5 * time.Millisecond})
	ledger := p.Ledger()
	var batch strings.Builder
	for i := 1; i <= n; i++ {
		id := strconv.Itoa(i)
		line := wiretest.RequestLine(id, "work", `{}`)
		ledger.Record(wiretest.BtoA, []byte(line))
		batch.WriteString(line + "\n")
		if i%2 == 1 {
			batch.WriteString(wiretest.CancelLine(id) + "\n")
		}
		if i%100 == 0 {
			p.SendRaw(batch.String())
			batch.Reset()
		}
	}
	p.SendRaw(batch.String())
	p.ExpectN(ctx, n)
	ping := wiretest.RequestLine(`"ping"`, "ping", `{}`)
	ledger.Record(wiretest.BtoA, []byte(ping))
	p.Send(ping)
	p.ExpectResult(ctx, `"ping"`, `"pong"`) // every dropped second reply was dropped before this
	ledger.CheckExactlyOnce(t, wiretest.BtoA)
	tally := ledger.Tally(wiretest.AtoB)
	require.Equal(t, n+1, tally.Answers())
	assert.Zero(t, tally.Errors[0], "no answer with code 0")
	t.Logf("%d requests, %d cancelled: %d results (%d markers), errors by code %v", n, n/2, tally.Results, tally.Markers, tally.Errors)
}
