package remotebench

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/bench"
	"github.com/acpkit/acprpc/internal/interoptest"
)

// streamTurn sends a stream turn of spec on c and reads it to its answer,
// checking every chunk in order; with cancelAt >= 0 it sends session/cancel
// once that many chunks are read. It returns the stop reason and the
// updates read.
func streamTurn(t *testing.T, c *Client, id int, spec bench.StreamSpec, cancelAt int) (string, int) {
	ctx := context.Background()
	prompt := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"session/prompt","params":{"sessionId":` +
		strconv.Quote(c.Session()) + `,"prompt":[{"type":"text","text":` + strconv.Quote(spec.Text()) + `}]}}`
	require.NoError(t, c.Send(ctx, []byte(prompt)))
	chunks, updates := 0, 0
	for {
		raw, err := c.Recv()
		require.NoError(t, err)
		msg := string(raw)
		if strings.Contains(msg, `"stopReason":"`) {
			require.Contains(t, msg, `"id":`+strconv.Itoa(id)+`,`)
			return strings.Split(strings.SplitAfter(msg, `"stopReason":"`)[1], `"`)[0], updates
		}
		updates++
		if strings.Contains(msg, "agent_message_chunk") {
			require.Contains(t, msg, `"text":"`+strconv.Itoa(chunks)+`:`, "chunk %d lost or out of order", chunks)
			chunks++
		}
		if chunks == cancelAt {
			require.NoError(t, c.Send(ctx, []byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":`+strconv.Quote(c.Session())+`}}`)))
		}
	}
}

// checkStream runs a stream turn over both transports on url: every chunk
// and tool_call_update in order, then end_turn.
func checkStream(t *testing.T, url string) {
	for _, transport := range []string{WebSocket, HTTP} {
		t.Run(transport, func(t *testing.T) {
			hc := NewHTTPClient()
			defer hc.CloseIdleConnections()
			c, err := Dial(context.Background(), transport, url, hc)
			require.NoError(t, err)
			defer c.Close()
			stop, updates := streamTurn(t, c, 2, bench.StreamSpec{N: 500, Tool: 50, Seed: 7}, -1)
			require.Equal(t, "end_turn", stop)
			require.Equal(t, 510, updates)
		})
	}
}

// acprpc's stream agent, served by remote.Server, streams a turn over both
// transports and stops a cancelled one long before its end.
func TestStreamServerAcprpc(t *testing.T) {
	url, stop := serveLocal(t, NewStreamServer())
	defer stop()
	checkStream(t, url)
	for _, transport := range []string{WebSocket, HTTP} {
		t.Run(transport+"/cancel", func(t *testing.T) {
			hc := NewHTTPClient()
			defer hc.CloseIdleConnections()
			c, err := Dial(context.Background(), transport, url, hc)
			require.NoError(t, err)
			defer c.Close()
			stop, updates := streamTurn(t, c, 2, bench.StreamSpec{N: 10_000_000, Seed: 7}, 100)
			require.Equal(t, "cancelled", stop)
			require.Less(t, updates, 10_000_000)
		})
	}
}

// The TypeScript SDK's server of the same stream agent streams the same
// turn to the same client.
func TestStreamServerTypeScript(t *testing.T) {
	dir := filepath.Join("..", "ts")
	node := interoptest.RequireNodeModules(t, dir, map[string]string{"@agentclientprotocol/sdk": "2.4.0", "ws": "8.23.0"})
	srv, err := Start(dir, node, "remote-agent.mjs", "stream")
	require.NoError(t, err)
	checkStream(t, srv.URL)
	require.NoError(t, srv.Stop())
}
