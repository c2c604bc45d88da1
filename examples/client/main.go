// Command client is the demo's ACP client, built on acprpc. It starts an
// agent as a subprocess, opens a session, sends a prompt and serves the
// agent's requests like an editor: a permission request waits for the user,
// and a terminal takes a moment to start. After -delay it cancels the turn,
// by session/cancel (acprpc.CancelSession) or, with -cancel=request, by
// cancelling the prompt's Call with acprpc.CancelRequestOnly, which sends
// $/cancel_request. It prints the turn's stop reason. On SIGINT or SIGTERM
// it shuts the connection down gracefully (acprpc.Conn.Shutdown): the
// agent's pending requests are answered as cancelled, the prompt's turn is
// cancelled (session/cancel, or $/cancel_request with -cancel=request), and
// the agent's stop reason is still printed before the agent is told to exit.
//
// From the repository's root:
//
//	go build -o /tmp/agent ./examples/agent
//	go run ./examples/client -agent /tmp/agent
//	go run ./examples/client -agent /tmp/agent -cancel=request
//	go run ./examples/client -agent /tmp/agent -cancel=none -approve -prompt hello
//	go run ./examples/client -agent /tmp/agent -protocol 2
//
// It cancels once the demo agent's two requests, the permission request and
// terminal/create, have arrived; -await names others, as for a v2 agent
// that sends no terminal/create (v2 has none):
//
//	go run ./examples/client -agent 'acpcheck agent' -protocol 2 -await session/request_permission
//
// Without -agent it builds ./examples/agent into a temporary directory
// first. With -url it connects to an agent that is already serving instead,
// over WebSocket (ws://, wss://) or Streamable HTTP (http://, https://):
//
//	go run ./examples/agent -listen 127.0.0.1:8080 &
//	go run ./examples/client -url ws://127.0.0.1:8080/acp
//	go run ./examples/client -url http://127.0.0.1:8080/acp
//
// See ./examples/cascade for the same conversation shown on the wire.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/examples/internal/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command; it returns the exit status. The end of ctx (a signal)
// interrupts the turn gracefully: the connection is shut down, and the
// turn's stop reason still read.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	agentPath := fs.String("agent", "", "the agent binary to run (default: build ./examples/agent into a temporary directory)")
	agentURL := fs.String("url", "", "connect to the agent serving at `URL` (ws://…/acp or http://…/acp) instead of running one")
	prompt := fs.String("prompt", "slow: analyze file X", `the prompt's text; the demo agent works until cancelled if it contains "slow"`)
	cancel := fs.String("cancel", demo.CancelSession, "how to cancel the turn: session (session/cancel), request ($/cancel_request on the prompt) or none")
	delay := fs.Duration("delay", 200*time.Millisecond, "how long after the agent's permission and terminal requests arrive to cancel")
	approve := fs.Bool("approve", false, "allow the tool at once instead of waiting for the user")
	terminal := fs.Duration("terminal-startup", time.Second, "how long a terminal takes to start")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	verbose := fs.Bool("v", false, "show the agent's log and acprpc's diagnostics")
	protocol := fs.Int("protocol", demo.ProtocolV1, "the ACP version to ask for: 1 or 2 (in 2, -cancel=request is not possible)")
	await := fs.String("await", acpv1.MethodSessionRequestPermission+","+acpv1.MethodTerminalCreate, "the agent's requests, comma-separated, whose arrival the cancel waits for")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *protocol != demo.ProtocolV1 && *protocol != demo.ProtocolV2 {
		fmt.Fprintf(stderr, "client: -protocol must be %d or %d\n", demo.ProtocolV1, demo.ProtocolV2)
		return 2
	}
	if *protocol == demo.ProtocolV2 && *cancel == demo.CancelRequest {
		fmt.Fprintf(stderr, "client: -cancel=request needs -protocol 1: %v\n", demo.ErrRequestCancelV2)
		return 2
	}
	stdout = &lockedWriter{w: stdout} // handlers print from goroutines of their own
	switch *cancel {
	case demo.CancelSession, demo.CancelRequest, demo.CancelNone:
	default:
		fmt.Fprintf(stderr, "client: -cancel must be %s, %s or %s\n", demo.CancelSession, demo.CancelRequest, demo.CancelNone)
		return 2
	}
	interrupt := ctx.Done()
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), *timeout)
	defer stop()

	if *agentPath == "" && *agentURL == "" {
		dir, err := os.MkdirTemp("", "acprpc-client-")
		if err != nil {
			fmt.Fprintln(stderr, "client:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if *agentPath, err = demo.BuildAgent(ctx, dir); err != nil {
			fmt.Fprintln(stderr, "client:", err)
			return 1
		}
	}

	session := &demo.Session{AgentPath: *agentPath, Interrupt: interrupt}
	if *verbose {
		session.AgentStderr = stderr
		session.AgentArgs = []string{"-v"}
		session.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	client := &demo.Client{
		Approve:         *approve,
		TerminalStartup: *terminal,
		OnAgentMessage:  func(text string) { fmt.Fprintf(stdout, "agent: %s\n", text) },
		OnRequest: func(method string) {
			switch method {
			case acpv1.MethodSessionRequestPermission:
				if *approve {
					fmt.Fprintln(stdout, "client: the agent asks permission to run `sleep 30`: allowed")
				} else {
					fmt.Fprintln(stdout, "client: the agent asks permission to run `sleep 30` (the user is thinking...)")
				}
			case acpv1.MethodTerminalCreate:
				fmt.Fprintf(stdout, "client: the agent asks for a terminal (starting it takes %v)\n", *terminal)
			}
		},
	}
	turn := demo.Turn{
		Prompt:   *prompt,
		Cancel:   *cancel,
		Delay:    *delay,
		Protocol: *protocol,
		Await:    strings.Split(*await, ","),
		OnCancel: func(how string) {
			if how == demo.CancelSession {
				fmt.Fprintln(stdout, "client: cancelling the turn: session/cancel")
			} else {
				fmt.Fprintln(stdout, "client: cancelling the turn: $/cancel_request on the prompt")
			}
		},
	}
	if cwd, err := os.Getwd(); err == nil {
		turn.Cwd = cwd
	}
	fmt.Fprintf(stdout, "you: %s\n", *prompt)
	var res demo.TurnResult
	var err error
	if *agentURL != "" {
		res, err = (&demo.Remote{URL: *agentURL, Log: session.Log, Interrupt: interrupt}).Run(ctx, client, turn)
	} else {
		res, err = session.Run(ctx, client, turn)
	}
	if err != nil {
		fmt.Fprintln(stderr, "client:", err)
		return 1
	}
	if res.MessageID != "" {
		fmt.Fprintf(stdout, "the agent inserted the prompt as %s\n", res.MessageID)
	}
	fmt.Fprintf(stdout, "stopReason: %s\n", res.StopReason)
	return 0
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
