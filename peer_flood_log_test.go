package acprpc_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// A hostile or broken peer that floods lines that are not JSON, or ID-less
// answers saying it could not read a message, each as long as it likes,
// costs the log a bounded number of bounded lines per connection: the
// first few of each kind, the last of them saying that the rest go
// unlogged. Each line not JSON is still answered -32700.
func TestPeerFloodLogsABoundedNumberOfLines(t *testing.T) {
	ctx := wiretest.Context(t)
	log := &wiretest.Recorder{}
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"ping": wiretest.Ping}, &acprpc.Options{Logger: log.Logger()})
	const flood = 200
	huge := strings.Repeat("x", 64<<10)
	for range flood {
		p.SendRaw("not json " + huge + "\n")
		p.ExpectError(ctx, "null", acprpc.CodeParseError)
	}
	for range flood {
		p.RespondError(`null`, acprpc.CodeParseError, "Parse error: "+huge)
	}
	p.Request("1", "ping", "")
	p.ExpectResult(ctx, "1", `"pong"`) // read after the flood, so it is logged

	var notJSON, unreadable []wiretest.Record
	for _, r := range log.Logged() {
		require.LessOrEqual(t, len(r.Message)+len(r.Attrs["line"])+len(r.Attrs["error"]), 2048, "a log line as long as the peer's: %.300v", r)
		switch {
		case r.Level < slog.LevelWarn:
		case strings.Contains(r.Message, "not JSON"):
			notJSON = append(notJSON, r)
		case strings.Contains(r.Message, "could not read"):
			unreadable = append(unreadable, r)
		}
	}
	for _, lines := range [][]wiretest.Record{notJSON, unreadable} {
		require.NotEmpty(t, lines)
		assert.LessOrEqual(t, len(lines), 10, "%.300v", lines)
		assert.Contains(t, lines[len(lines)-1].Message, "the next ones on this connection are not logged")
		assert.NotContains(t, lines[0].Message, "the next ones on this connection are not logged")
	}
}
