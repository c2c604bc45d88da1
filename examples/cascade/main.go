// Command cascade shows ACP's cascading cancellation on the wire. It builds
// the demo agent, starts it as a subprocess, and drives it with the demo
// client over the agent's stdin and stdout: a prompt turn in which the agent
// asks the client for permission and for a terminal, cancelled by the client
// while both are pending. It then prints every message that went by as a
// timeline, and checks that every request was answered exactly once.
//
// From the repository's root:
//
//	go run ./examples/cascade                   # cancel by session/cancel
//	go run ./examples/cascade -cancel=request   # cancel by $/cancel_request on the prompt
//	go run ./examples/cascade -raw              # the exact JSON lines
//	go run ./examples/cascade -protocol 2       # the same turn in ACP v2
//	go run ./examples/cascade -transport ws     # over WebSocket, the agent serving at ws://127.0.0.1:…/acp
//	go run ./examples/cascade -transport http   # over Streamable HTTP
//
// In ACP v2 the prompt is answered with its messageId as soon as the agent
// inserts it, the turn runs on as the session's foreground work, and it ends
// with an idle state_update carrying the stop reason; session/cancel is the
// way to cancel it.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/acpkit/acprpc/examples/internal/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cascade", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cancel := fs.String("cancel", demo.CancelSession, "how the client cancels the turn: session (session/cancel) or request ($/cancel_request on the prompt)")
	delay := fs.Duration("delay", 200*time.Millisecond, "how long after the agent's permission and terminal requests arrive the client cancels")
	raw := fs.Bool("raw", false, "print the exact JSON lines")
	agentPath := fs.String("agent", "", "the agent binary to run (default: build ./examples/agent into a temporary directory)")
	prompt := fs.String("prompt", "slow: analyze file X", "the prompt's text")
	showLog := fs.Bool("log", false, "print the agent's stderr log after the timeline")
	protocol := fs.Int("protocol", demo.ProtocolV1, "the ACP version the client asks for: 1 or 2")
	transport := fs.String("transport", "stdio", "how the client reaches the agent: stdio (a subprocess's pipes), ws (WebSocket) or http (Streamable HTTP)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cancel != demo.CancelSession && *cancel != demo.CancelRequest {
		fmt.Fprintf(stderr, "cascade: -cancel must be %q or %q\n", demo.CancelSession, demo.CancelRequest)
		return 2
	}
	if *protocol != demo.ProtocolV1 && *protocol != demo.ProtocolV2 {
		fmt.Fprintf(stderr, "cascade: -protocol must be %d or %d\n", demo.ProtocolV1, demo.ProtocolV2)
		return 2
	}
	if *transport != "stdio" && *transport != "ws" && *transport != "http" {
		fmt.Fprintf(stderr, "cascade: -transport must be stdio, ws or http\n")
		return 2
	}
	if *protocol == demo.ProtocolV2 && *cancel == demo.CancelRequest {
		fmt.Fprintf(stderr, "cascade: -cancel=request needs -protocol 1: %v\n", demo.ErrRequestCancelV2)
		return 2
	}

	if *agentPath == "" {
		dir, err := os.MkdirTemp("", "acprpc-cascade-")
		if err != nil {
			fmt.Fprintln(stderr, "cascade:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(stdout, "building the demo agent (go build ./examples/agent) ...")
		if *agentPath, err = demo.BuildAgent(ctx, dir); err != nil {
			fmt.Fprintln(stderr, "cascade:", err)
			return 1
		}
	}

	how := map[string]string{
		demo.CancelSession: "session/cancel",
		demo.CancelRequest: "$/cancel_request on the prompt",
	}[*cancel]
	fmt.Fprintf(stdout, "ACP v%d cascading cancellation with acprpc over %s: the client cancels the turn by %s,\n", *protocol, transportNames[*transport], how)
	fmt.Fprintf(stdout, "%v after the agent's permission and terminal requests arrive.\n", *delay)
	fmt.Fprintf(stdout, "%s\n\n", demo.Legend)

	var agentLog bytes.Buffer
	rec := demo.NewRecorder()
	client := &demo.Client{TerminalStartup: 10 * time.Second}
	turn := demo.Turn{Prompt: *prompt, Cancel: *cancel, Delay: *delay, Protocol: *protocol}
	var res demo.TurnResult
	var err error
	if *transport == "stdio" {
		session := &demo.Session{AgentPath: *agentPath, AgentStderr: &agentLog, Recorder: rec}
		res, err = session.Run(ctx, client, turn)
	} else {
		res, err = runRemote(ctx, *agentPath, *transport, &agentLog, rec, client, turn)
	}

	sum := demo.Render(stdout, rec.Lines(), *raw)
	if *showLog || err != nil {
		fmt.Fprintf(stdout, "\nagent log (stderr):\n%s", agentLog.String())
	}
	switch {
	case err != nil:
		fmt.Fprintln(stderr, "cascade:", err)
		return 1
	case !sum.OK:
		fmt.Fprintln(stderr, "cascade: a check failed")
		return 1
	case res.StopReason != demo.StopCancelled:
		fmt.Fprintf(stderr, "cascade: the turn ended with %q, not %q\n", res.StopReason, demo.StopCancelled)
		return 1
	}
	return 0
}
