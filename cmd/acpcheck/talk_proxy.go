package main

import (
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
)

// proxyOptions say what agent to put behind the proxy and what to keep.
type proxyOptions struct {
	Argv   []string
	Env    []string
	Record io.Writer // the wire as JSON lines, if not nil
}

// maxKeptLine is how much of one line the proxy keeps for its checks and
// its record: the rest of a longer line is forwarded, counted, and not
// kept, so that a line with no end cannot grow acpcheck's memory.
const maxKeptLine = 1 << 20

// splitter cuts a byte stream into lines for the monitor and the record.
// It numbers the lines a chunk ends before the chunk is forwarded, and
// hands them to the sequencer after.
type splitter struct {
	dir     string
	q       *sequencer
	partial []byte
	size    int // the length of the line begun in partial, which keeps at most maxKeptLine of it
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
			s.keep(b)
			return
		}
		line, size := b[:i], i
		if s.size > 0 {
			s.keep(line)
			line, size = s.partial, s.size
			s.partial, s.size = s.partial[:0], 0
		}
		if size == len(line) {
			line = bytes.TrimSuffix(line, []byte("\r"))
			size = len(line)
		}
		s.q.put(s.seq, s.ms, s.dir, line, size)
		s.seq++
		b = b[i+1:]
	}
}

// keep adds part of a line to partial, up to maxKeptLine of the line.
func (s *splitter) keep(b []byte) {
	s.size += len(b)
	if room := maxKeptLine - len(s.partial); room > 0 {
		s.partial = append(s.partial, b[:min(room, len(b))]...)
	}
}

// flush hands on a last line that had no newline.
func (s *splitter) flush() {
	if s.size > 0 {
		seq, ms := s.q.reserve(1)
		s.q.put(seq, ms, s.dir, s.partial, s.size)
		s.partial, s.size = nil, 0
	}
}

// forward copies src to dst byte for byte, as it comes, and shows each
// chunk to the splitter before it is written: its lines are numbered and
// handed over (to the checks and the record) first, so that a proxy killed
// by an editor that quits as soon as it has read a line (coder's example
// client kills its agent so) has recorded that line, and so that no write
// blocked on a peer lies between a line's number and its handing over,
// for the other direction's lines to wait on. After a failed write (the
// editor closed its end) it reads on, for the record and the checks, and
// discards what it reads; broken, if not nil, is closed then. It returns
// at src's end.
func forward(dst io.Writer, src io.Reader, s *splitter, w *readWatch, broken chan<- struct{}) error {
	buf := make([]byte, 64<<10)
	var werr error
	for {
		w.enter()
		n, err := src.Read(buf)
		w.leave()
		if n > 0 {
			s.reserve(buf[:n])
			s.write(buf[:n])
			if werr == nil {
				_, werr = dst.Write(buf[:n])
				w.wrote()
				if werr != nil && broken != nil {
					close(broken)
				}
			}
			if werr != nil && broken == nil {
				s.flush()
				return werr
			}
		}
		if err != nil {
			s.flush()
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
				return werr
			}
			return err
		}
	}
}

// recorder writes the wire as JSON lines, one per message, each line whole
// in one write as it goes: a proxy killed at any moment leaves a record of
// whole lines, all but perhaps the last.
type recorder struct {
	mu  sync.Mutex
	w   io.Writer
	err error // the first failed write: the record stops there
}

func (r *recorder) line(seq int, ms float64, dir string, raw []byte, size int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	l := Line{Seq: seq, Ms: ms, Dir: dir}
	l.setRaw(raw)
	if size > len(raw) {
		l.Size = size
	}
	b, _ := json.Marshal(l)
	_, r.err = r.w.Write(append(b, '\n'))
}

// end writes the record's last line: how the conversation ended.
func (r *recorder) end(e recordEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		b, _ := json.Marshal(e)
		_, r.err = r.w.Write(append(b, '\n'))
	}
}

// conversationEnd is how a proxied conversation ended.
type conversationEnd struct {
	code int    // the agent's exit status
	why  string // what ended it
	// byEditor: the editor (or a signal) ended it, so that requests still
	// open were cut short, not left unanswered, unless no turn was running.
	byEditor bool
	// inputEnded is the number of the first line after the editor's input
	// ended, or the signal or the broken output came (0: the agent ended).
	inputEnded int
}

// runProxy puts the agent between stdin and stdout, forwarding every byte
// unchanged both ways, and reports each violation to report as it
// happens. The conversation ends when the agent exits, when the editor
// closes stdin or its end of stdout, or when ctx ends (a signal): the agent
// is then stopped, each step bounded (stopBounds), and its output read to
// its end (outputIdle, drainBound). It returns how the conversation ended,
// or an error wrapping errNotRun.
func runProxy(ctx context.Context, o proxyOptions, stdin io.Reader, stdout io.Writer, agentStderr io.Writer, report func(violation)) (conversationEnd, error) {
	agent, err := startAgent(o.Argv, o.Env, agentStderr)
	if err != nil {
		return conversationEnd{}, fmt.Errorf("%w: %w", errNotRun, err)
	}
	defer agent.stop(defaultStop)
	m := newMonitor(report)
	var rec *recorder
	if o.Record != nil {
		rec = &recorder{w: o.Record}
	}
	q := newSequencer(func(seq int, ms float64, dir string, line []byte, size int) {
		m.cutShort(size > len(line))
		m.line(dir, line, ms) // numbers it seq too: the lines come in order
		if size > len(line) {
			m.tooLong(seq, dir, size)
		}
		if rec != nil {
			rec.line(seq, ms, dir, line, size)
		}
	})
	stdinEnded := make(chan struct{})
	var inputEnded int // set before stdinEnded closes
	go func() {
		// The editor's input to the agent: at its end, the agent's stdin
		// closes too. It may outlive runProxy when stdin never ends; it
		// writes to a closed pipe then and returns.
		_ = forward(agent.stdin, stdin, &splitter{dir: toAgent, q: q}, nil, nil)
		inputEnded, _ = q.reserve(0)
		agent.stdin.Close()
		close(stdinEnded)
	}()
	outDone := make(chan error, 1)
	outBroken := make(chan struct{})
	reading := &readWatch{}
	reading.wrote() // the start counts as progress
	go func() { outDone <- forward(stdout, agent.stdout, &splitter{dir: fromAgent, q: q}, reading, outBroken) }()

	end := conversationEnd{byEditor: true}
	bounds := defaultStop
	select {
	case <-ctx.Done():
		end.why = "acpcheck was signalled to stop"
		end.inputEnded, _ = q.reserve(0)
	case <-stdinEnded:
		end.why, end.inputEnded = "the editor closed the agent's stdin", inputEnded
		// The agent may still be writing its last words: it is stopped
		// once it has written nothing for the stop's exit bound.
		awaitQuiet(ctx, agent, reading, outBroken, defaultStop.exit)
		bounds.exit = 0 // waited
	case <-outBroken:
		end.why = "the editor closed its end of the agent's stdout"
		end.inputEnded, _ = q.reserve(0)
	case <-agent.exited:
		end.why, end.byEditor = "the agent exited", false
	}
	if ctx.Err() != nil {
		bounds.exit = 0 // a signal to the proxy is passed on at once
	}
	if !agent.stop(bounds) {
		end.why += "; the agent would not die, even of SIGKILL"
	}
	// The agent's output ends when it and whatever shares its stdout have
	// exited; what it wrote before is all forwarded first.
	awaitOutputEnd(outDone, reading, agent.stdout)
	q.finish(time.Second)
	m.end(conversationEnder{byClient: end.byEditor, inputEnded: end.inputEnded})
	if rec != nil {
		rec.end(recordEnd{Why: end.why, ByEditor: end.byEditor, InputEnded: end.inputEnded})
	}
	end.code = 1 // killed, or stuck in the kernel
	if agent.awaitExit(0) && agent.cmd.ProcessState.ExitCode() >= 0 {
		end.code = agent.cmd.ProcessState.ExitCode()
	}
	return end, nil
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
	findings := newFindingWriter(stderr, findingQueue)
	end, err := runProxy(ctx, o, stdin, stdout, stderr, findings.report)
	if err != nil {
		findings.close("", findingsBound)
		fmt.Fprintf(stderr, "acpcheck: %v\n", err)
		return 2
	}
	findings.close(end.why, findingsBound)
	return end.code
}

// outputIdle is how long the agent's output may stay open with nothing
// coming once the agent has exited: a process it left behind may hold it.
const outputIdle = 2 * time.Second

// awaitQuiet waits for the agent to exit, until its output has made no
// progress for d (nothing read, nothing written on), or ctx ends, or the
// editor closes stdout.
func awaitQuiet(ctx context.Context, agent *agentProc, reading *readWatch, outBroken <-chan struct{}, d time.Duration) {
	tick := time.NewTicker(d / 10)
	defer tick.Stop()
	for {
		select {
		case <-agent.exited:
			return
		case <-ctx.Done():
			return
		case <-outBroken:
			return
		case <-tick.C:
			if reading.quiet() >= d {
				return
			}
		}
	}
}

// drainBound is the longest the proxy reads the agent's output once the
// agent is stopped: a process that escaped the stop may hold it open and
// write without end, and an editor that stopped reading may hold the last
// write.
const drainBound = 10 * time.Second

// awaitOutputEnd waits for the forwarding of the agent's output to end
// (done), which it does when the agent and whatever shares its stdout have
// exited, so that all the agent wrote is forwarded first. Once the forward
// has waited outputIdle in a read with nothing coming, or drainBound has
// passed, the output is closed; the forward is given outputIdle more to
// end, and left behind if its write to the editor is stuck.
func awaitOutputEnd(done <-chan error, w *readWatch, output io.Closer) {
	bound := time.After(drainBound)
	for {
		select {
		case <-done:
			return
		case <-time.After(outputIdle):
			if w.waiting() < outputIdle {
				continue
			}
		case <-bound:
		}
		output.Close()
		select {
		case <-done:
		case <-time.After(outputIdle):
		}
		return
	}
}

// readWatch tells how long a forward has been waiting in its current read,
// and how long since it last read or wrote anything. A nil *readWatch
// watches nothing.
type readWatch struct {
	since    atomic.Int64 // when the read began, in Unix nanoseconds; 0 outside a read
	progress atomic.Int64 // when a read or a write last returned, in Unix nanoseconds
}

func (w *readWatch) enter() {
	if w != nil {
		w.since.Store(time.Now().UnixNano())
	}
}

func (w *readWatch) leave() {
	if w != nil {
		w.since.Store(0)
		w.progress.Store(time.Now().UnixNano())
	}
}

// wrote notes a write that returned.
func (w *readWatch) wrote() {
	if w != nil {
		w.progress.Store(time.Now().UnixNano())
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

// quiet is how long since the forward last read or wrote anything: a write
// stuck on an editor that stopped reading is no progress.
func (w *readWatch) quiet() time.Duration {
	return time.Since(time.Unix(0, w.progress.Load()))
}
