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
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// proxyOptions say what agent to put behind the proxy and what to keep.
type proxyOptions struct {
	Argv   []string
	Env    []string
	Record io.Writer // the wire as JSON lines, if not nil
}

// splitter cuts a byte stream into lines for the monitor and the record.
// It numbers the lines a chunk ends before the chunk is forwarded, and
// hands them to the sequencer after.
type splitter struct {
	dir     string
	q       *sequencer
	partial []byte
	// seq and ms are the number of the next line handed over and when its
	// chunk went.
	seq int
	ms  float64
}

// reserve numbers the lines that chunk ends, before it is forwarded.
func (s *splitter) reserve(chunk []byte) {
	if n := bytes.Count(chunk, []byte("\n")); n > 0 {
		s.seq, s.ms = s.q.reserve(n)
	}
}

// write hands over the lines chunk ends, once it was forwarded.
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
		s.q.put(s.seq, s.ms, s.dir, bytes.TrimSuffix(line, []byte("\r")))
		s.seq++
		b = b[i+1:]
	}
}

// flush hands on a last line that had no newline.
func (s *splitter) flush() {
	if len(s.partial) > 0 {
		seq, ms := s.q.reserve(1)
		s.q.put(seq, ms, s.dir, s.partial)
		s.partial = nil
	}
}

// forward copies src to dst byte for byte, as it comes, and shows each
// chunk to the splitter: its lines are numbered before it is written, and
// handed over after, also when the write fails, so that the other
// direction's lines are not held for them. It returns at src's end or at a
// failed write.
func forward(dst io.Writer, src io.Reader, s *splitter, w *readWatch) error {
	buf := make([]byte, 64<<10)
	for {
		w.enter()
		n, err := src.Read(buf)
		w.leave()
		if n > 0 {
			s.reserve(buf[:n])
			_, werr := dst.Write(buf[:n])
			s.write(buf[:n])
			if werr != nil {
				s.flush()
				return werr
			}
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
	mu sync.Mutex
	w  *bufio.Writer
}

func (r *recorder) line(seq int, ms float64, dir string, raw []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := Line{Seq: seq, Ms: ms, Dir: dir, Raw: string(raw)}
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
		rec = &recorder{w: bufio.NewWriter(o.Record)}
		defer rec.flush()
	}
	q := newSequencer(func(seq int, ms float64, dir string, line []byte) {
		m.line(dir, line) // numbers it seq too: the lines come in order
		if rec != nil {
			rec.line(seq, ms, dir, line)
		}
	})
	go func() {
		// The editor's input to the agent: at its end, the agent's stdin
		// closes too. It may outlive runProxy when stdin never ends; it
		// writes to a closed pipe then and returns.
		_ = forward(agent.stdin, stdin, &splitter{dir: toAgent, q: q}, nil)
		agent.stdin.Close()
	}()
	outDone := make(chan error, 1)
	reading := &readWatch{}
	go func() { outDone <- forward(stdout, agent.stdout, &splitter{dir: fromAgent, q: q}, reading) }()

	select {
	case <-ctx.Done():
		signalGroup(agent.cmd, false)
	case <-agent.exited:
	}
	<-agent.exited
	// The agent's output ends when it and whatever shares its stdout have
	// exited; what it wrote before is all forwarded first.
	awaitOutputEnd(outDone, reading, agent.stdout)
	q.finish(time.Second)
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

// outputIdle is how long the agent's output may stay open with nothing
// coming once the agent has exited: a process it left behind may hold it.
const outputIdle = 2 * time.Second

// awaitOutputEnd waits for the forwarding of the agent's output to end
// (done), which it does when the agent and whatever shares its stdout have
// exited, so that all the agent wrote is forwarded first. Once the forward
// has waited outputIdle in a read with nothing coming, the output is
// closed: never while bytes are still being read or forwarded, however slow
// that is, so none is lost.
func awaitOutputEnd(done <-chan error, w *readWatch, output io.Closer) {
	for {
		select {
		case <-done:
			return
		case <-time.After(outputIdle):
			if w.waiting() >= outputIdle {
				output.Close()
				<-done
				return
			}
		}
	}
}

// readWatch tells how long a forward has been waiting in its current read.
// A nil *readWatch watches nothing.
type readWatch struct {
	since atomic.Int64 // when the read began, in Unix nanoseconds; 0 outside a read
}

func (w *readWatch) enter() {
	if w != nil {
		w.since.Store(time.Now().UnixNano())
	}
}

func (w *readWatch) leave() {
	if w != nil {
		w.since.Store(0)
	}
}

// waiting is how long the current read has waited, 0 outside a read.
func (w *readWatch) waiting() time.Duration {
	since := w.since.Load()
	if since == 0 {
		return 0
	}
	return time.Since(time.Unix(0, since))
}
