package acprpc_test

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// A line that is not JSON (an agent's stray print to its stdout) is logged
// with its first bytes, saying that an agent's stdout carries ACP messages
// only and its logs go to stderr: to a client, which has sent initialize,
// as the agent's doing; to a side that does not know its peer's role, as
// the likely cause.
func TestLineNotJSONIsLoggedForTheClient(t *testing.T) {
	ctx := wiretest.Context(t)
	t.Run("a client reading its agent", func(t *testing.T) {
		log := &wiretest.Recorder{}
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{Logger: log.Logger()})
		initialized := goCall(c, ctx, "initialize", map[string]int{"protocolVersion": 1}, nil)
		init := p.ExpectRequest(ctx, "initialize")
		banner := "Starting my-agent v1.2.3 with model gpt-x in /home/user/project, debug logging enabled: " + strings.Repeat("é", 10)
		p.SendRaw(banner + "\n")
		p.Respond(string(init.ID), `{"protocolVersion":1}`)
		require.NoError(t, wiretest.Recv(t, ctx, initialized))

		warning, ok := log.FindLogged(slog.LevelWarn, "not JSON")
		require.True(t, ok, "no warning: %v", log.Logged())
		assert.Equal(t, "acprpc: the agent wrote a line that is not JSON to its stdout; it is dropped, and answered -32700. "+
			"An agent's stdout carries ACP messages only, and its logs go to stderr: "+
			"a print to stdout in the agent (fmt.Println, console.log, print) does this; move it to stderr, or report it to the agent's authors",
			warning.Message)
		assert.Equal(t, banner[:80]+"...", warning.Attrs["line"])
		assert.Equal(t, strconv.Itoa(len(banner)), warning.Attrs["size"])
		p.ExpectError(ctx, "null", acprpc.CodeParseError)
	})
	t.Run("a side that does not know its peer's role", func(t *testing.T) {
		log := &wiretest.Recorder{}
		_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"ping": wiretest.Ping}, &acprpc.Options{Logger: log.Logger()})
		p.SendRaw("hello from main\n")
		p.ExpectError(ctx, "null", acprpc.CodeParseError)
		warning, ok := log.FindLogged(slog.LevelWarn, "not JSON")
		require.True(t, ok, "no warning: %v", log.Logged())
		assert.Equal(t, "acprpc: the peer sent a line that is not JSON; it is dropped, and answered -32700. "+
			"If the peer is an agent, its stdout carries ACP messages only, and its logs go to stderr: "+
			"a print to stdout in the agent (fmt.Println, console.log, print) does this", warning.Message)
		assert.Equal(t, "hello from main", warning.Attrs["line"])
	})
}
