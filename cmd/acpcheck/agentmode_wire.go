package main

import (
	"io"
	"slices"
	"sync"
	"time"
)

// agentWire watches acpcheck agent's conversation on its stdio, byte for
// byte as it goes, and puts each line through the proxy's monitor, whose
// client rules judge the client: the rules are written once, over the
// wire, whoever stands on the other side.
type agentWire struct {
	q *sequencer
	m *monitor

	mu        sync.Mutex
	lines     []Line
	found     []violation
	lastHeard time.Time // when the client's last bytes came
	// inputEnded is the number of the first line after the client's input
	// ended, or acpcheck ended the conversation; 0 before.
	inputEnded int
}

func newAgentWire() *agentWire {
	w := &agentWire{lastHeard: time.Now()}
	w.m = newMonitor(w.report)
	w.q = newSequencer(w.take)
	return w
}

func (w *agentWire) report(v violation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.found = append(w.found, v)
}

// take is the sequencer's delivery of one line, in wire order.
func (w *agentWire) take(seq int, ms float64, dir string, line []byte, size int) {
	w.m.cutShort(size > len(line))
	w.m.line(dir, line, ms)
	if size > len(line) {
		w.m.tooLong(seq, dir, size)
	}
	l := Line{Seq: seq, Ms: ms, Dir: dir}
	l.setRaw(line)
	if size > len(line) {
		l.Size = size
	}
	l.msg = parse(line)
	w.mu.Lock()
	w.lines = append(w.lines, l)
	w.mu.Unlock()
}

// input is the client's side of the wire, read from r.
func (w *agentWire) input(r io.Reader) io.Reader {
	return &tapReader{r: r, s: &splitter{dir: toAgent, q: w.q}, w: w}
}

// output is acpcheck's side of the wire, written to out.
func (w *agentWire) output(out io.Writer) io.Writer {
	return &tapWriter{w: out, s: &splitter{dir: fromAgent, q: w.q}}
}

// silence is how long since the client last sent anything.
func (w *agentWire) silence() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.lastHeard)
}

// inputEnds notes that the client's input ended, or that acpcheck ends the
// conversation: the lines numbered from now on came after. The first call
// counts.
func (w *agentWire) inputEnds() {
	next, _ := w.q.reserve(0)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inputEnded == 0 {
		w.inputEnded = next
	}
}

// finish hands over the lines still on their way, ends the monitor's
// conversation (the client's side ended it, or acpcheck did for it), and
// returns the conversation and the rules it broke.
func (w *agentWire) finish() ([]Line, []violation) {
	w.q.finish(time.Second)
	w.mu.Lock()
	ended := w.inputEnded
	w.mu.Unlock()
	w.m.end(conversationEnder{byClient: true, inputEnded: ended})
	w.mu.Lock()
	defer w.mu.Unlock()
	slices.SortFunc(w.lines, func(a, b Line) int { return a.Seq - b.Seq })
	return w.lines, w.found
}

// sofar returns the conversation as delivered so far and the rules it
// broke, copied: the conversation goes on.
func (w *agentWire) sofar() ([]Line, []violation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := slices.Clone(w.lines)
	slices.SortFunc(lines, func(a, b Line) int { return a.Seq - b.Seq })
	return lines, slices.Clone(w.found)
}

// tapReader reads the client's messages and shows them to the splitter.
// It has no Close: acprpc must not take closing it for the end of a read
// blocked on stdin, which it is not.
type tapReader struct {
	r io.Reader
	s *splitter
	w *agentWire
}

func (t *tapReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.w.mu.Lock()
		t.w.lastHeard = time.Now()
		t.w.mu.Unlock()
		t.s.reserve(p[:n])
		t.s.write(p[:n])
	}
	if err != nil {
		t.s.flush()
		t.w.inputEnds()
	}
	return n, err
}

// tapWriter writes acpcheck's messages and shows them to the splitter:
// their lines are numbered before the write, so that the client's answer
// comes after its cause.
type tapWriter struct {
	w io.Writer
	s *splitter
}

func (t *tapWriter) Write(p []byte) (int, error) {
	t.s.reserve(p)
	n, err := t.w.Write(p)
	t.s.write(p)
	return n, err
}
