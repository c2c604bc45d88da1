package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/acpkit/acprpc/examples/internal/demo"
)

var transportNames = map[string]string{
	"stdio": "stdio",
	"ws":    "WebSocket",
	"http":  "Streamable HTTP",
}

// runRemote runs the turn with the agent serving on a loopback port (agent
// -listen), reached over WebSocket (transport "ws") or Streamable HTTP
// ("http"), then stops the agent, which must exit with status 0.
func runRemote(ctx context.Context, agentPath, transport string, agentLog io.Writer, rec *demo.Recorder,
	client *demo.Client, turn demo.Turn) (demo.TurnResult, error) {
	proc, url, err := demo.StartListeningAgent(agentPath, agentLog)
	if err != nil {
		return demo.TurnResult{}, err
	}
	if transport == "ws" {
		url = "ws" + strings.TrimPrefix(url, "http")
	}
	res, err := (&demo.Remote{URL: url, Recorder: rec}).Run(ctx, client, turn)
	return res, errors.Join(err, proc.Stop())
}
