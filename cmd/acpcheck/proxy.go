package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"
)

// proxyOptions say what agent to put behind the proxy and what to keep.
type proxyOptions struct {
	Argv   []string
	Env    []string
	Record io.Writer // the wire as JSON lines, if not nil
}

// splitter cuts a byte stream into lines for the monitor and the record,
// after the bytes were forwarded.
type splitter struct {
	dir     string
	partial []byte
	emit    func(dir string, line []byte)
}

func (s *splitter) write(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.partial = append(s.partial, b...)
			return
		}
		line := b[:i]
		if len(s.partial) > 0 {
			line = append(s.partial, line...)
			s.partial = s.partial[:0]
		}
		s.emit(s.dir, bytes.TrimSuffix(line, []byte("\r")))
		b = b[i+1:]
	}
}

// flush hands on a last line that had no newline.
func (s *splitter) flush() {
	if len(s.partial) > 0 {
		s.emit(s.dir, s.partial)
		s.partial = nil
	}
}

// forward copies src to dst byte for byte, as it comes, and shows each
// chunk to the splitter once it is written. It returns at src's end or at
// a failed write.
func forward(dst io.Writer, src io.Reader, s *splitter) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
			s.write(buf[:n])
		}
		if err != nil {
			s.flush()
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return err
		}
	}
}

// recorder writes the wire as JSON lines, one per message.
type recorder struct {
	mu    sync.Mutex
	w     *bufio.Writer
	start time.Time
}

func (r *recorder) line(seq int, dir string, raw []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := Line{Seq: seq, Ms: float64(time.Since(r.start).Microseconds()) / 1000, Dir: dir, Raw: string(raw)}
	if !utf8.Valid(raw) {
		l.Raw, l.Base64 = "", raw
	}
	b, _ := json.Marshal(l)
	r.w.Write(b)
	r.w.WriteByte('\n')
}

func (r *recorder) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.w.Flush()
}

// runProxy puts the agent between stdin and stdout, forwarding every byte
// unchanged both ways, and reports each violation to report as it
// happens. It returns when the agent has exited and its output ended, with
// the agent's exit status, or an error wrapping errNotRun.
func runProxy(ctx context.Context, o proxyOptions, stdin io.Reader, stdout io.Writer, agentStderr io.Writer, report func(violation)) (int, error) {
	agent, err := startAgent(o.Argv, o.Env, agentStderr)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errNotRun, err)
	}
	defer agent.stop()
	m := newMonitor(report)
	var rec *recorder
	if o.Record != nil {
		rec = &recorder{w: bufio.NewWriter(o.Record), start: time.Now()}
		defer rec.flush()
	}
	emit := func(dir string, line []byte) {
		seq := m.line(dir, line)
		if rec != nil {
			rec.line(seq, dir, line)
		}
	}
	go func() {
		// The editor's input to the agent: at its end, the agent's stdin
		// closes too. It may outlive runProxy when stdin never ends; it
		// writes to a closed pipe then and returns.
		_ = forward(agent.stdin, stdin, &splitter{dir: toAgent, emit: emit})
		agent.stdin.Close()
	}()
	outDone := make(chan error, 1)
	go func() { outDone <- forward(stdout, agent.stdout, &splitter{dir: fromAgent, emit: emit}) }()

	select {
	case <-ctx.Done():
		signalGroup(agent.cmd, false)
	case <-agent.exited:
	}
	<-agent.exited
	// The agent's output ends when it and whatever shares its stdout have
	// exited; what it wrote before is all forwarded first.
	select {
	case <-outDone:
	case <-time.After(2 * time.Second):
		agent.stdout.Close()
		<-outDone
	}
	m.end()
	code := agent.cmd.ProcessState.ExitCode()
	if code < 0 {
		code = 1
	}
	return code, nil
}

func proxyCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := commandFlags("acpcheck proxy", "acpcheck proxy [flags] -- AGENT_CMD [ARGS...]", stderr)
	record := fs.String("record", "", "write the wire to `FILE`, a JSON object per message with its time and direction")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	o := proxyOptions{Argv: fs.Args()}
	if len(o.Argv) == 0 {
		fmt.Fprintln(stderr, "acpcheck proxy: no agent command: give it after the flags, as in acpcheck proxy -- my-agent --stdio")
		return 2
	}
	if *record != "" {
		f, err := os.Create(*record)
		if err != nil {
			fmt.Fprintf(stderr, "acpcheck proxy: cannot record the wire: %v\n", err)
			return 2
		}
		defer f.Close()
		o.Record = f
	}
	var mu sync.Mutex
	report := func(v violation) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "acpcheck: the conversation broke %s (%s): %s; lines %v\n", v.Rule.ID, v.Rule.Spec, v.Detail, v.Lines)
	}
	code, err := runProxy(ctx, o, stdin, stdout, stderr, report)
	if err != nil {
		fmt.Fprintf(stderr, "acpcheck: %v\n", err)
		return 2
	}
	return code
}
