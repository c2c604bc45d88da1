package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
)

// agentModeName is how a report of acpcheck agent names what was run.
const agentModeName = "acpcheck agent"

// agentFiles are where acpcheck agent writes its report: text to Report
// (stderr if ""), and JSON and a web page if asked. Each file is replaced
// whole, never written in place: the report is written as each turn ends
// and again at the conversation's end, and a client may kill its agent at
// any moment, which must leave the last whole report, not part of one.
type agentFiles struct {
	Report, JSON, HTML string

	mu sync.Mutex // orders the writes of turns that end at once
}

// agentCommand is `acpcheck agent`: acpcheck as the agent a client starts,
// judging how the client cancels. Its stdout carries ACP alone; the report
// goes to files, or the text to stderr.
func agentCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := commandFlags("acpcheck agent", "acpcheck agent [flags]\n\nGive it to a client (an editor) as its agent's command: it speaks ACP v1 or v2 (as\nthe client asks) on stdio, waits in each prompt turn for the client to cancel, and reports how the client did\nwhen the client closes its stdin.", stderr)
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
	rep := serveAgentMode(ctx, o, stdin, stdout, files.replace)
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
	for _, path := range []string{report, asJSON, html} {
		if path == "" {
			continue
		}
		file, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		file.Close()
	}
	return &agentFiles{Report: report, JSON: asJSON, HTML: html}, nil
}

// write writes the conversation's report in each form asked for: the text
// to stderr, within findingsBound, when no file was given for it.
func (f *agentFiles) write(rep *Report, stderr io.Writer) error {
	if f.Report == "" {
		writeWithin(stderr, rep.WriteText, findingsBound)
	}
	return f.replace(rep)
}

// replace replaces each of the report's files with rep.
func (f *agentFiles) replace(rep *Report) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	if f.Report != "" {
		errs = append(errs, replaceFile(f.Report, func(w io.Writer) error { rep.WriteText(w); return nil }))
	}
	if f.JSON != "" {
		errs = append(errs, replaceFile(f.JSON, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}))
	}
	if f.HTML != "" {
		errs = append(errs, replaceFile(f.HTML, rep.WriteHTML))
	}
	return errors.Join(errs...)
}

// replaceFile writes a file beside path with write and renames it to path,
// so that path holds either the old whole content or the new.
func replaceFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	err = errors.Join(write(tmp), tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
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
// It returns the report on the client, and hands the report so far to
// asOfTurn as each turn ends, before its answer is written.
func serveAgentMode(ctx context.Context, o agentModeOptions, stdin io.Reader, stdout io.Writer, asOfTurn func(*Report) error) *Report {
	w := newAgentWire()
	blockers := &blockingFiles{}
	defer blockers.close()
	a := newCheckAgent(o, blockers)
	a.turnEnded = func(n int) { _ = asOfTurn(agentSnapshot(w, a, n)) }
	// Not ctx: a signal shuts the connection down gracefully, below.
	conn := acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(w.input(stdin), w.output(stdout)), a,
		&acprpc.Options{CancelGrace: -1}) // every wait of a turn is bounded by itself
	why, graceful := awaitConversationEnd(ctx, o, conn, a, w)
	if graceful {
		w.inputEnds() // acpcheck ends it now, turn or not
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
	return agentReport(w, a, why)
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
