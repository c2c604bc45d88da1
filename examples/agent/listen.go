package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/acpkit/acprpc/examples/internal/demo"
)

// serve is -listen: it serves the demo agent at addr until ctx ends, and
// returns the exit status.
func serve(ctx context.Context, addr string, log *slog.Logger, graceful bool) int {
	newAgent := func(log *slog.Logger) *demo.Agent {
		agent := demo.NewAgent(log)
		if !graceful {
			agent.ConfirmWait = 0
		}
		return agent
	}
	err := demo.ServeAgent(ctx, addr, log, newAgent, shutdownWait, func(url string) {
		fmt.Println(url) // the first line of output, for whoever started the agent
		log.Info("listening", "url", url, "websocket", "ws"+url[len("http"):])
	})
	if err != nil {
		log.Error("serving failed", "error", err)
		return 1
	}
	return 0
}
