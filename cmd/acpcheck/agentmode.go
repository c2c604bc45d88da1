package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/acpkit/acprpc"
)

// agentModeName is how a report of acpcheck agent names what was run.
const agentModeName = "acpcheck agent"

// agentFiles are where acpcheck agent writes its report: text to Report
// (stderr if nil), and JSON and a web page if asked.
type agentFiles struct {
	Report, JSON, HTML *os.File
}

// agentCommand is `acpcheck agent`: acpcheck as the agent a client starts,
// judging how the client cancels. Its stdout carries ACP alone; the report
// goes to files, or the text to stderr.
func agentCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := commandFlags("acpcheck agent", "acpcheck agent [flags]\n\nGive it to a client (an editor) as its agent's command: it speaks ACP v1 on stdio,\nwaits in each prompt turn for the client to cancel, and reports how the client did\nwhen the client closes its stdin.", stderr)
	var o agentModeOptions
	reportOut := fs.String("report", "", "write the report as text to `FILE` (default: stderr)")
	jsonOut := fs.String("json", "", "also write the report as JSON to `FILE`")
	htmlOut := fs.String("html", "", "also write the report as a self-contained web page to `FILE`")
	fs.DurationVar(&o.CancelWithin, "cancel-within", 5*time.Second, "how long a turn waits for the client to cancel it before it ends by itself, end_turn")
	fs.DurationVar(&o.CancelWait, "cancel-wait", 5*time.Second, "the longest wait for the client's answers after a cancel")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "the longest wait for the client's initialize, and for an answer it owes at once")
	fs.DurationVar(&o.Idle, "idle", 10*time.Minute, "how long the client may stay silent between turns before acpcheck reports and exits")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if err := o.validate(fs.NArg()); err != nil {
		fmt.Fprintf(stderr, "acpcheck agent: %v\n", err)
		return 2
	}
	files, err := createAgentFiles(*reportOut, *jsonOut, *htmlOut)
	if err != nil {
		fmt.Fprintf(stderr, "acpcheck agent: cannot write the report: %v\n", err)
		return 2
	}
	defer files.close()
	rep := serveAgentMode(ctx, o, stdin, stdout)
	if err := files.write(rep, stderr); err != nil {
		fmt.Fprintf(stderr, "acpcheck agent: cannot write the report: %v\n", err)
		return 2
	}
	return rep.ExitCode()
}

// validate refuses options no conversation could use.
func (o agentModeOptions) validate(nargs int) error {
	if nargs > 0 {
		return errors.New("takes no arguments: the client starts it as acpcheck agent [flags]")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"-cancel-within", o.CancelWithin}, {"-cancel-wait", o.CancelWait}, {"-timeout", o.Timeout}, {"-idle", o.Idle}} {
		if d.v <= 0 {
			return fmt.Errorf("%s must be positive, not %s", d.name, d.v)
		}
	}
	return nil
}

// createAgentFiles creates the report's files before the conversation, so
// that a path that cannot be written is said at once, not after it.
func createAgentFiles(report, asJSON, html string) (*agentFiles, error) {
	f := &agentFiles{}
	for _, c := range []struct {
		path string
		to   **os.File
	}{{report, &f.Report}, {asJSON, &f.JSON}, {html, &f.HTML}} {
		if c.path == "" {
			continue
		}
		file, err := os.Create(c.path)
		if err != nil {
			f.close()
			return nil, err
		}
		*c.to = file
	}
	return f, nil
}

func (f *agentFiles) close() {
	for _, file := range []*os.File{f.Report, f.JSON, f.HTML} {
		if file != nil {
			file.Close()
		}
	}
}

// write writes the report in each form asked for: the text to stderr,
// within findingsBound, when no file was given for it.
func (f *agentFiles) write(rep *Report, stderr io.Writer) error {
	var errs []error
	if f.Report != nil {
		rep.WriteText(f.Report)
	} else {
		writeWithin(stderr, rep.WriteText, findingsBound)
	}
	if f.JSON != nil {
		enc := json.NewEncoder(f.JSON)
		enc.SetIndent("", "  ")
		errs = append(errs, enc.Encode(rep))
	}
	if f.HTML != nil {
		errs = append(errs, rep.WriteHTML(f.HTML))
	}
	for _, file := range []*os.File{f.Report, f.JSON, f.HTML} {
		if file != nil {
			errs = append(errs, file.Sync())
		}
	}
	return errors.Join(errs...)
}

// writeWithin writes with write to w, waiting at most bound: a client that
// never reads acpcheck's stderr does not keep it from exiting.
func writeWithin(w io.Writer, write func(io.Writer), bound time.Duration) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		write(w)
	}()
	waitFor(done, bound)
}

// serveAgentMode serves the client on stdin and stdout until the
// conversation ends: the client closes stdin (or stops reading stdout), it
// sends no initialize within Timeout, it stays silent for Idle with no
// turn running, or ctx ends (a signal). Every step of the end is bounded.
// It returns the report on the client.
func serveAgentMode(ctx context.Context, o agentModeOptions, stdin io.Reader, stdout io.Writer) *Report {
	w := newAgentWire()
	blockers := &blockingFiles{}
	defer blockers.close()
	a := newCheckAgent(o, blockers)
	// Not ctx: a signal shuts the connection down gracefully, below.
	conn := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(w.input(stdin), w.output(stdout)), a,
		&acprpc.Options{CancelGrace: -1}) // every wait of a turn is bounded by itself
	why, graceful := awaitConversationEnd(ctx, o, conn, a, w)
	midTurn := a.busy()
	if graceful {
		grace, cancel := context.WithTimeout(context.Background(), o.CancelWait)
		_ = conn.Shutdown(grace)
		cancel()
	}
	closed := make(chan struct{})
	go func() {
		conn.Close()
		close(closed)
	}()
	waitFor(closed, o.CancelWait)
	blockers.close() // a turn still waiting on a read lets it go
	turnsDone := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(turnsDone)
	}()
	waitFor(turnsDone, 2*(o.CancelWait+o.Timeout))
	return agentReport(w, a, why, midTurn)
}

// awaitConversationEnd waits for the conversation to end and says why,
// and whether acpcheck ends it (graceful: its turns are to be cancelled
// and answered before the connection closes).
func awaitConversationEnd(ctx context.Context, o agentModeOptions, conn *acprpc.Conn, a *checkAgent, w *agentWire) (why string, graceful bool) {
	initBound := time.NewTimer(o.Timeout)
	defer initBound.Stop()
	tick := time.NewTicker(min(o.Idle/10, time.Second))
	defer tick.Stop()
	initialized := a.initialized
	for {
		select {
		case <-conn.Done():
			return "the client closed acpcheck's stdin (" + errText(conn.Err()) + ")", false
		case <-ctx.Done():
			return "acpcheck was signalled to stop", true
		case <-initialized:
			initBound.Stop()
			initialized = nil
		case <-initBound.C:
			return fmt.Sprintf("the client sent no initialize within -timeout %s", o.Timeout), true
		case <-tick.C:
			if !a.busy() && w.silence() >= o.Idle {
				return fmt.Sprintf("the client sent nothing for -idle %s, no turn running", o.Idle), true
			}
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
