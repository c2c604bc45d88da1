package acprpc_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// A hostile or broken peer that floods messages each of which is worth a
// warning (lines that are not JSON, ID-less answers saying it could not
// read a message, invalid requests, cancels with malformed params, session
// methods before initialize), each as long as it likes, costs the log a
// bounded number of bounded lines per connection: the first few of each
// kind, the last of them saying that the rest go unlogged (an answer to no
// call, logged at debug level, only bounded in size). Every message
// is still answered as before.
func TestPeerFloodLogsABoundedNumberOfLines(t *testing.T) {
	huge := strings.Repeat("x", 64<<10)
	for _, kind := range []struct {
		name, logged string
		send         func(p *wiretest.Peer, i int)
	}{
		{"not JSON", "not JSON", func(p *wiretest.Peer, _ int) { p.SendRaw("not json " + huge + "\n") }},
		{"unreadable", "could not read", func(p *wiretest.Peer, _ int) {
			p.RespondError(`null`, acprpc.CodeParseError, "Parse error: "+huge)
		}},
		{"invalid request", "bad message", func(p *wiretest.Peer, i int) {
			p.Send(fmt.Sprintf(`{"jsonrpc":"1.0","id":%d,"method":"x/%s"}`, i, huge))
		}},
		{"invalid response", "invalid response", func(p *wiretest.Peer, i int) {
			p.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"%d%s","result":1,"error":{"code":1,"message":"m"}}`, i, huge))
		}},
		{"stray answer", "", func(p *wiretest.Peer, i int) {
			p.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"%d%s","result":1}`, i, huge))
		}},
		{"malformed cancel", "malformed params", func(p *wiretest.Peer, _ int) {
			p.Notify(acprpc.MethodCancelRequest, `{"requestId":{"x":"`+huge+`"}}`)
		}},
		{"before initialize", "before initialize", func(p *wiretest.Peer, i int) {
			p.Request(fmt.Sprintf(`"%d%s"`, i, huge), "session/new", `{"cwd":"/","mcpServers":[]}`)
		}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			log := &wiretest.Recorder{}
			_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"ping": wiretest.Ping}, &acprpc.Options{Logger: log.Logger()})
			const flood = 100
			for i := range flood {
				kind.send(p, i)
			}
			p.Request("1", "ping", "")
			for !strings.Contains(string(p.Expect(ctx).Raw), `"pong"`) { // the flood's answers, then the pong: read after the flood
			}
			var lines []wiretest.Record
			for _, r := range log.Logged() {
				size := len(r.Message)
				for _, v := range r.Attrs {
					size += len(v)
				}
				require.LessOrEqual(t, size, 2048, "a log line as long as the peer's message: %.300v", r)
				if r.Level >= slog.LevelWarn && kind.logged != "" && strings.Contains(r.Message, kind.logged) {
					lines = append(lines, r)
				}
			}
			if kind.logged == "" {
				return // logged at debug level, each line bounded
			}
			require.NotEmpty(t, lines)
			assert.LessOrEqual(t, len(lines), 10, "%.300v", lines)
			assert.Contains(t, lines[len(lines)-1].Message, "the next ones on this connection are not logged")
			assert.NotContains(t, lines[0].Message, "the next ones on this connection are not logged")
		})
	}
}
