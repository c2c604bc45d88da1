// Command agent is the demo's ACP agent, built on acprpc. It speaks ACP over
// stdio: messages on stdin and stdout, logs on stderr only.
//
// Each prompt turn sends a session/update, then asks the client, at once, for
// permission to run a tool (session/request_permission) and for a terminal
// (terminal/create), both under the turn's context. A prompt that contains
// the word "slow" then works until it is cancelled; any other ends with
// stopReason "end_turn". Cancelling the turn, by session/cancel or by
// $/cancel_request on the prompt, cancels both requests, each with its own
// $/cancel_request, and the turn ends with stopReason "cancelled".
//
// It serves ACP v1 and v2 on one connection (an acprpc.VersionRouter): the
// version is the highest one at or below the client's protocolVersion. A
// client asking for 2 gets the same turn in v2's form: session/prompt is
// answered with the prompt's messageId at once, the turn reports
// state_update running, echoes the prompt, and ends with an idle
// state_update carrying the stop reason; session/cancel cascades the same
// way; a prompt that arrives while the session works is held until that
// work ends. v2 has no terminal/create: the turn still sends it, in its v1
// shape, as its second nested request. A slow v2 turn also reports its tool
// call with capabilities.cancel: tool_call/cancel is accepted at once
// (acprpc.Conn.CancellableToolCall), cancels the two requests the tool call
// waits on, reports the tool call cancelled, and the turn ends with
// stopReason "end_turn"; a cancel of a tool call that is final or unknown
// is refused -32602.
//
// The agent exits with status 0 when its stdin closes. On SIGINT or SIGTERM
// it shuts down gracefully (acprpc.Conn.Shutdown): a turn in flight is
// cancelled and answered {"stopReason":"cancelled"} (in v2, its idle
// state_update), its requests to the client are cancelled, and the client
// reads all of that before the agent's stdout ends; then it exits with
// status 0.
//
// A cancelled turn waits up to a second for the client to answer the
// requests it cancelled, as in ACP's diagram; -graceful=false ends it at
// once, as agents that do not wait do.
//
// With -listen ADDR it serves the same agent at http://ADDR/acp instead, over
// WebSocket and Streamable HTTP alike, to clients on this machine only (the
// remote package's defaults), each connection with an agent of its own. It
// prints the URL as its first line. On SIGINT or SIGTERM it drains
// (remote.Server.Shutdown): new connections are refused with 503, each open
// one shuts down gracefully as above, and it exits with status 0.
//
// Served to other machines, as a replica behind a load balancer, it is told
// what to answer besides this machine: -allow-host NAME for the Host a
// client sends (the balancer's public name), -allow-peer CIDR for the
// addresses connections come from (the balancer's), -allow-origin ORIGIN
// for browser pages, and -token-file FILE for a bearer token every request
// must carry. docs/scaling.md puts three replicas behind HAProxy.
//
//	go run ./examples/agent
//	go run ./examples/agent -listen 127.0.0.1:8080
//	go run ./examples/agent -listen :8080 -allow-host acp.example.test -allow-peer 10.0.0.0/8 -token-file /run/secrets/acp-token
//	go run ./examples/cascade   # watch it work with the demo client
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/examples/internal/demo"
)

func main() {
	verbose := flag.Bool("v", false, "log acprpc's diagnostics too")
	listen := flag.String("listen", "", "serve at http://`ADDR`/acp (WebSocket and Streamable HTTP) instead of stdio")
	graceful := flag.Bool("graceful", true, "after a cancel, wait for the client to answer the requests it cut short")
	var where deployment
	where.register(flag.CommandLine)
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logs := newLogWriter(os.Stderr) // a burst of turns logs in a few writes, not one per line
	defer logs.Flush()
	exit := func(code int) {
		logs.Flush()
		os.Exit(code)
	}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *listen != "" {
		opts, err := where.options()
		if err != nil {
			log.Error("bad flag", "error", err)
			exit(2)
		}
		exit(serve(ctx, *listen, opts, log, *graceful))
	}
	if where.set() {
		log.Error("bad flag: -allow-host, -allow-peer, -allow-origin and -token-file apply to -listen only")
		exit(2)
	}

	agent := demo.NewAgent(log)
	if !*graceful {
		agent.ConfirmWait = 0
	}
	// Not the signal's context: its end would close the connection at once,
	// with nothing answered.
	conn := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(os.Stdin, os.Stdout), agent, &acprpc.Options{Logger: log})
	select {
	case <-conn.Done(): // the client closed our stdin
	case <-ctx.Done():
		log.Info("shutting down: every request in flight is answered as cancelled")
		grace, cancel := context.WithTimeout(context.Background(), shutdownWait)
		if err := conn.Shutdown(grace); err != nil {
			log.Warn("shutdown cut short", "error", err)
		}
		cancel()
	}
	log.Info("connection closed", "reason", conn.Err())
	conn.Close()
	agent.Wait() // every turn's context has ended; let them finish
}

// shutdownWait bounds a graceful shutdown: the turns' grace period and the
// client's confirmations fit well within it.
const shutdownWait = 5 * time.Second
