// Command acpcheck tells an ACP agent's author whether the agent gets
// cancellation and the protocol's other exactly-once rules right.
//
//	acpcheck run [flags] -- AGENT_CMD ARGS...
//
// starts the agent and drives it as an ACP client through scenarios: the
// initialize handshake, a session and a prompt turn to its end, a turn
// cancelled by session/cancel and the turn after it, a prompt cancelled by
// $/cancel_request, cancels of unknown and answered IDs and other
// notifications (never to be answered), a line that is not JSON and a
// request for an unknown method (answered -32700 and -32601, the connection
// living on), and the end of its stdin (the agent exits, leaving no process
// behind). Each rule is reported as passed, failed (with the wire lines that
// show it and the page of the specification that states it) or not brought
// about, when a scenario could not be made to happen.
//
//	acpcheck run [flags] -url ws://HOST/acp    (or http://HOST/acp)
//
// checks an agent served over WebSocket or Streamable HTTP the same way, a
// fresh connection standing for a fresh process; what needs the agent's
// process (its stdin closed, what it leaves behind) is not brought about,
// nor, over Streamable HTTP, a line that is not JSON, which that transport
// refuses before any agent reads it.
//
//	acpcheck proxy [-record FILE] -- AGENT_CMD ARGS...
//
// is given to an editor as the agent's command: it starts the agent,
// forwards every byte both ways unchanged, records the wire, and reports on
// stderr each rule the conversation breaks, as it happens.
//
//	acpcheck agent [-report FILE] [-json FILE] [-html FILE]
//
// is given to a client (an editor) as its agent's command: an ACP v1 agent
// whose every prompt turn streams updates and keeps requests open (a
// permission request, and a terminal and a file read if the client offers
// them) until the client cancels the turn, and which reports, when the
// client closes its stdin, how the client cancelled: the proxy's client
// rules, judged over its own wire. Its stdout carries ACP alone.
//
//	acpcheck report [-json] [-html FILE] RECORDING
//
// reads the proxy's record back and reports each of the rules the proxy
// watches as passed, failed or not brought about. Both run and report write
// -html FILE, one self-contained web page: what was checked and what failed,
// and the conversation as a timeline whose rows open to their wire lines.
//
//	acpcheck matrix -o FILE LABEL=REPORT.json...
//
// draws the -json reports of several agents as one web page: agents down,
// rules across, each cell passed, failed (linking its findings and their
// wire lines) or not brought about.
//
// acpcheck -version prints the release it was built as.
//
// The exit status of run and report is 0 when every rule that could be
// brought about passed, 1 when any failed, and 2 when the agent could not be
// run at all (or the recording not read).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	// A write to a closed stdout or stderr (an editor that quit, a report
	// piped into head) fails with EPIPE instead of killing acpcheck.
	signal.Ignore(syscall.SIGPIPE)
	// SIGHUP too: a terminal closing under acpcheck (a client run at one
	// that exits) must leave its report and record, as a stop does.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := mainCode(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  acpcheck run [flags] -- AGENT_CMD [ARGS...]     check an agent over stdio
  acpcheck run [flags] -url URL                   check an agent served over WebSocket or Streamable HTTP
  acpcheck proxy [flags] -- AGENT_CMD [ARGS...]   run an agent for an editor, watching the conversation
  acpcheck agent [flags]                          be a client's agent, and check how the client cancels
  acpcheck report [flags] RECORDING               check a conversation the proxy recorded
  acpcheck matrix -o FILE LABEL=REPORT.json...    one page of several agents' run -json reports
  acpcheck -version                               print acpcheck's version

Run 'acpcheck run -h', 'acpcheck proxy -h', 'acpcheck agent -h' or 'acpcheck report -h' for the flags.
`

// mainCode runs acpcheck with args and returns its exit status.
func mainCode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runCommand(ctx, args[1:], stdout, stderr)
	case "proxy":
		return proxyCommand(ctx, args[1:], os.Stdin, stdout, stderr)
	case "agent":
		return agentCommand(ctx, args[1:], os.Stdin, stdout, stderr)
	case "report":
		return reportCommand(args[1:], stdout, stderr)
	case "matrix":
		return matrixCommand(args[1:], stdout, stderr)
	case "-version", "--version", "version":
		fmt.Fprintf(stdout, "acpcheck %s\n", version)
		return 0
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "acpcheck: unknown command %q\n%s", args[0], usage)
	return 2
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("acpcheck run", "acpcheck run [flags] -- AGENT_CMD [ARGS...]\n       acpcheck run [flags] -url URL", stderr)
	var o runOptions
	fs.StringVar(&o.Prompt, "prompt", "Say hello.", "the text of a prompt whose turn ends by itself")
	fs.StringVar(&o.SlowPrompt, "slow-prompt", "Count slowly from one to a thousand, one number per line.", "the text of a prompt whose turn lasts long enough to cancel")
	fs.StringVar(&o.Cwd, "cwd", "", "the working directory session/new names (default: the current directory)")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "the longest wait for an answer")
	fs.DurationVar(&o.CancelAfter, "cancel-after", 3*time.Second, "cancel a turn after its first update, or after this long")
	fs.DurationVar(&o.CancelWait, "cancel-wait", 5*time.Second, "the longest wait for an answer after a cancel")
	fs.DurationVar(&o.ExitWait, "exit-wait", 3*time.Second, "how long the agent may take to exit after its stdin closed")
	fs.DurationVar(&o.Settle, "settle", 300*time.Millisecond, "how long to watch for answers that must not come")
	fs.BoolVar(&o.OfferTerminal, "offer-terminal", false, "offer the agent a terminal (v1), one that runs nothing, so that a cancelled turn's terminal/create is checked too")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	htmlOut := fs.String("html", "", "also write the report as a self-contained web page to `FILE`")
	verbose := fs.Bool("v", false, "copy the agent's stderr to acpcheck's")
	o.registerRemote(fs)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	o.Argv = fs.Args()
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "acpcheck run: %v\n", err)
		return 2
	}
	if o.Cwd == "" {
		o.Cwd, _ = os.Getwd()
	}
	if *verbose {
		o.Stderr = stderr
	}
	rep, err := runChecks(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "acpcheck: %v\n", err)
		return 2
	}
	return printReport(rep, *asJSON, *htmlOut, stdout, stderr)
}

// validate refuses options no run could use.
func (o *runOptions) validate() error {
	if err := o.validateTarget(); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"-timeout", o.Timeout}, {"-cancel-after", o.CancelAfter}, {"-cancel-wait", o.CancelWait}, {"-exit-wait", o.ExitWait}} {
		if d.v <= 0 {
			return fmt.Errorf("%s must be positive, not %s", d.name, d.v)
		}
	}
	if o.Settle < 0 {
		return fmt.Errorf("-settle must not be negative, not %s", o.Settle)
	}
	if o.Prompt == "" || o.SlowPrompt == "" {
		return errors.New("-prompt and -slow-prompt must not be empty")
	}
	return nil
}
