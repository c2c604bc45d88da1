package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpkit/acprpc/bench"
)

// A burst of cancels over stdio: one client, written here on the raw wire so
// that every agent meets the same one, opens N sessions on a spawned agent
// and starts a prompt turn on each; every turn asks the client for
// permission and for a terminal, which the client holds unanswered. Then
// the client writes N session/cancel in one write. It answers each
// $/cancel_request for a request it holds at once (the permission with the
// cancelled outcome, terminal/create with -32800), batching what it writes
// while more input waits, and stops the clock at the last prompt answered
// cancelled.

// burstAgent is one agent under test: a name and its command line.
type burstAgent struct{ name, argv string }

// burstRowNames are the agents burst knows: examples/agent in its graceful
// and its prompt mode, coder's SDK serving the same turn, and the same turn
// again on acprpc in the bench's server, without examples/agent's log and
// with each phase of the cascade stamped (bench/turns_acprpc.go); and the
// lean turn of coder's example agent, on coder and on acprpc, which answers
// a cancel at once, with no last update.
var burstRowNames = []string{"acprpc", "acprpc-prompt", "coder", "acprpc-phases", "acprpc-phases-prompt", "coder-lean", "acprpc-lean"}

// burstAgents returns the command line of each agent named, examples/agent
// being the binary agent and the bench's server the binary server.
func burstAgents(agent, server string, names []string) ([]burstAgent, error) {
	argv := map[string]string{
		"acprpc":               agent,
		"acprpc-prompt":        agent + " -graceful=false",
		"coder":                server + " -peer coder -turns",
		"acprpc-phases":        server + " -peer acprpc -turns",
		"acprpc-phases-prompt": server + " -peer acprpc -turns -graceful=false",
		// coder's example agent's turn: a cancelled turn answers at once,
		// with no last update; the same turn on acprpc.
		"coder-lean":  server + " -peer coder -turns -stopped=false",
		"acprpc-lean": server + " -peer acprpc -turns -graceful=false -stopped=false",
	}
	return pick("burst", argv, names, burstRowNames, func(name, argv string) burstAgent { return burstAgent{name, argv} })
}

// pick returns, for each name, what build makes of its command line in
// argv, or an error naming the known ones for a name argv lacks.
func pick[T any](what string, argv map[string]string, names, known []string, build func(name, argv string) T) ([]T, error) {
	var out []T
	for _, n := range names {
		a, ok := argv[n]
		if !ok {
			return nil, fmt.Errorf("%s: unknown name %q (known: %s)", what, n, strings.Join(known, ", "))
		}
		out = append(out, build(n, a))
	}
	return out, nil
}

type burstResult struct {
	Agent string `json:"agent"`
	N     int    `json:"n"`
	Held  int64  `json:"held"` // requests from the agent held before the cancels
	// What the agent sent after the cancels: $/cancel_request for the held
	// requests, and prompts answered cancelled (the marker or -32800).
	CancelRequests int64   `json:"cancelRequests"`
	Answers        int64   `json:"cancelledAnswers"`
	AllAnswerMs    float64 `json:"allAnsweredMs"` // from the write of the cancels to the last answer
	// StartMono is the write of the cancels on CLOCK_MONOTONIC (ns), to
	// line the run up with a trace or perf record taken of the agent.
	StartMono int64 `json:"startMono"`
	// The agent's CPU time and context switches, every thread, from the
	// write of the cancels to the last answer.
	AgentCPUMs    float64 `json:"agentCpuMs"`
	AgentSwitches int64   `json:"agentSwitches"`
	ClientCPUMs   float64 `json:"clientCpuMs"` // this process's, the same span: the client every agent meets
	// Phases are the agent's stamps (the acprpc-phases rows only).
	Phases []burstPhase `json:"phases,omitempty"`
	Load   string       `json:"load"` // the load average when the run ended
	Error  string       `json:"error,omitempty"`
}

// burstPhase is one phase of the cascade as the agent stamped it: how many
// stamps, and the first, median and last, in ms from the write of the
// cancels.
type burstPhase struct {
	Name     string  `json:"name"`
	Count    int     `json:"count"`
	FirstMs  float64 `json:"firstMs"`
	MedianMs float64 `json:"medianMs"`
	LastMs   float64 `json:"lastMs"`
}

func runBurst(cfg *config, agents []burstAgent, n, runs int, wait time.Duration) error {
	var results []burstResult
	for range runs { // interleaved, agent by agent; each run a fresh process
		for _, a := range agents {
			res, err := burstOnce(a, n, wait)
			if err != nil {
				res.Error = err.Error()
			}
			results = append(results, res)
		}
	}
	return writeResults(cfg, "burst", results, burstTable(results, agents))
}

// burstClient is the client side of a burst: its read loop and its writes.
type burstClient struct {
	mu  sync.Mutex
	out *bufio.Writer

	replies   chan burstReply // answers to the client's own requests
	held      atomic.Int64
	allHeld   chan struct{}
	cancels   atomic.Int64
	answers   atomic.Int64
	last      atomic.Int64 // bench.MonoNow of the last cancelled answer
	allAnswer chan struct{}
	counting  atomic.Bool
	n         int64

	heldMu sync.Mutex
	heldBy map[string]string // request ID -> method, for requests held
}

type burstReply struct {
	id     int64
	result json.RawMessage
}

type burstMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// write sends lines now.
func (c *burstClient) write(p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.out.Write(p); err != nil {
		return err
	}
	return c.out.Flush()
}

// read is the client's read loop; it ends with its input.
func (c *burstClient) read(br *bufio.Reader) {
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.handle(line)
		}
		if br.Buffered() == 0 { // no more input waiting: send what is due
			c.mu.Lock()
			_ = c.out.Flush()
			c.mu.Unlock()
		}
		if err != nil {
			close(c.replies)
			return
		}
	}
}

var errCancelledAnswer = `,"error":{"code":-32800,"message":"Request cancelled"}}` + "\n"

func (c *burstClient) handle(line []byte) {
	var m burstMessage
	if json.Unmarshal(line, &m) != nil {
		return
	}
	switch {
	case m.Method == bench.MethodCancelRequest:
		if !c.counting.Load() {
			return
		}
		c.cancels.Add(1)
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		c.heldMu.Lock()
		method, ok := c.heldBy[string(p.RequestID)]
		delete(c.heldBy, string(p.RequestID))
		c.heldMu.Unlock()
		if !ok {
			return
		}
		answer := `{"jsonrpc":"2.0","id":` + string(p.RequestID)
		if method == "session/request_permission" {
			answer += `,"result":{"outcome":{"outcome":"cancelled"}}}` + "\n"
		} else {
			answer += errCancelledAnswer
		}
		c.mu.Lock() // flushed by the read loop once no input waits
		_, _ = c.out.WriteString(answer)
		c.mu.Unlock()
	case m.Method != "" && len(m.ID) > 0: // a request from the agent: held
		c.heldMu.Lock()
		c.heldBy[string(m.ID)] = m.Method
		c.heldMu.Unlock()
		if c.held.Add(1) == 2*c.n {
			close(c.allHeld)
		}
	case m.Method == "" && len(m.ID) > 0:
		id, _ := strconv.ParseInt(string(m.ID), 10, 64)
		if id >= burstPromptBase {
			if m.Error != nil && m.Error.Code == bench.CodeRequestCancelled || bytes.Contains(m.Result, []byte(`"cancelled"`)) {
				c.last.Store(bench.MonoNow())
				if c.answers.Add(1) == c.n {
					close(c.allAnswer)
				}
			}
			return
		}
		c.replies <- burstReply{id, m.Result}
	}
}

// Request IDs: initialize 0, session/new 1..N, session/prompt from here.
const burstPromptBase = 1 << 30

func burstOnce(a burstAgent, n int, wait time.Duration) (res burstResult, err error) {
	res = burstResult{Agent: a.name, N: n}
	p, err := spawnQuiet(strings.Fields(a.argv))
	if err != nil {
		return res, err
	}
	var t0 int64
	closed := false
	defer func() {
		if closed {
			return
		}
		if cerr := p.close(); err == nil && cerr != nil {
			err = fmt.Errorf("agent: %w", cerr)
		}
	}()
	closeAgent := func() error {
		closed = true
		if err := p.close(); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		res.Phases = burstPhases(p.phases, t0)
		return nil
	}
	c := &burstClient{out: bufio.NewWriterSize(p.stdin, 1<<20), replies: make(chan burstReply, n+1),
		allHeld: make(chan struct{}), allAnswer: make(chan struct{}), n: int64(n), heldBy: map[string]string{}}
	go c.read(bufio.NewReaderSize(p.stdout, 1<<16))
	await := func(k int) (map[int64]json.RawMessage, error) {
		got := map[int64]json.RawMessage{}
		timeout := time.After(wait)
		for len(got) < k {
			select {
			case r, ok := <-c.replies:
				if !ok {
					return got, errors.New("the agent's output ended")
				}
				got[r.id] = r.result
			case <-timeout:
				return got, fmt.Errorf("%d of %d answers", len(got), k)
			}
		}
		return got, nil
	}
	if err := c.write([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":true}}}` + "\n")); err != nil {
		return res, err
	}
	if _, err := await(1); err != nil {
		return res, fmt.Errorf("initialize: %w", err)
	}
	var batch bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`+"\n", i)
	}
	if err := c.write(batch.Bytes()); err != nil {
		return res, err
	}
	news, err := await(n)
	if err != nil {
		return res, fmt.Errorf("session/new: %w", err)
	}
	sessions := make([]string, 0, n)
	batch.Reset()
	for i := 1; i <= n; i++ {
		var s struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(news[int64(i)], &s); err != nil || s.SessionID == "" {
			return res, fmt.Errorf("session/new answered %s", news[int64(i)])
		}
		sessions = append(sessions, s.SessionID)
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"slow work"}]}}`+"\n",
			burstPromptBase+i, s.SessionID)
	}
	if err := c.write(batch.Bytes()); err != nil {
		return res, err
	}
	select {
	case <-c.allHeld:
	case <-time.After(wait):
		return res, fmt.Errorf("%d of %d requests from the agent arrived", c.held.Load(), 2*n)
	}
	res.Held = c.held.Load()
	batch.Reset()
	for _, s := range sessions {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`+"\n", s)
	}
	c.counting.Store(true)
	pid := strconv.Itoa(p.cmd.Process.Pid)
	cpu0, switches0 := procSched(pid)
	self0, _ := procSched("self")
	t0 = bench.MonoNow()
	res.StartMono = t0
	if err := c.write(batch.Bytes()); err != nil {
		return res, err
	}
	select {
	case <-c.allAnswer:
	case <-time.After(wait):
	}
	if cpu1, switches1 := procSched(pid); cpu0 >= 0 && cpu1 >= 0 {
		res.AgentCPUMs = float64(cpu1-cpu0) / float64(time.Millisecond)
		res.AgentSwitches = switches1 - switches0
	}
	if self1, _ := procSched("self"); self0 >= 0 && self1 >= 0 {
		res.ClientCPUMs = float64(self1-self0) / float64(time.Millisecond)
	}
	res.Answers = c.answers.Load()
	if res.Answers > 0 {
		res.AllAnswerMs = float64(c.last.Load()-t0) / 1e6
	}
	// A $/cancel_request may follow its turn's answer: wait until every one
	// owed has come, or the input has been still for a while.
	for prev := int64(-1); c.cancels.Load() < 2*int64(n) && c.cancels.Load() != prev; {
		prev = c.cancels.Load()
		time.Sleep(200 * time.Millisecond)
	}
	res.CancelRequests = c.cancels.Load()
	res.Load = loadAverage()
	if err := closeAgent(); err != nil {
		return res, err
	}
	if res.Answers < int64(n) {
		return res, fmt.Errorf("%d of %d prompts answered cancelled", res.Answers, n)
	}
	return res, nil
}

// burstPhases reads the agent's "P" lines (see cmd/server), CLOCK_MONOTONIC
// stamps, relative to t0.
func burstPhases(lines []string, t0 int64) []burstPhase {
	var out []burstPhase
	ms := func(ns int64) float64 { return float64(ns-t0) / 1e6 }
	for _, l := range lines {
		var ph, count int
		var first, med, last int64
		if _, err := fmt.Sscan(l, &ph, &count, &first, &med, &last); err != nil || ph < 0 || ph >= len(bench.PhaseNames) {
			continue
		}
		out = append(out, burstPhase{Name: bench.PhaseNames[ph], Count: count, FirstMs: ms(first), MedianMs: ms(med), LastMs: ms(last)})
	}
	return out
}

// loadAverage is /proc/loadavg's first three fields, or "" where it cannot be read.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return ""
}

func burstTable(results []burstResult, agents []burstAgent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "A burst of cancels over stdio: N sessions on a spawned agent, each with a prompt turn holding two requests\n")
	fmt.Fprintf(&b, "to the client (session/request_permission, terminal/create); then N session/cancel in one write. \"held\" counts\n")
	fmt.Fprintf(&b, "the requests held before it, \"$/cancel\" the $/cancel_request the agent sent after it (2N owed), \"answers\" the\n")
	fmt.Fprintf(&b, "prompts answered cancelled, \"all answered\" the time from the write to the last of them, \"agent cpu\" and\n")
	fmt.Fprintf(&b, "\"switches\" the agent's CPU time and context switches (all threads) over the same span, \"client cpu\" the\n")
	fmt.Fprintf(&b, "client's (this process, the same for every agent). acprpc is\n")
	fmt.Fprintf(&b, "examples/agent, -prompt its -graceful=false; acprpc-phases is the same turn in the bench's server, without\n")
	fmt.Fprintf(&b, "the example's log and with each phase stamped. One line per run, runs interleaved; then the medians.\n\n")
	fmt.Fprintf(&b, "%-20s %6s %6s %9s %8s %15s %13s %9s %11s  %s\n", "agent", "N", "held", "$/cancel", "answers", "all answered ms", "agent cpu ms", "switches", "client cpu", "load")
	for _, r := range results {
		fmt.Fprintf(&b, "%-20s %6d %6d %9d %8d %15.1f %13.1f %9d %11.1f  %s\n", r.Agent, r.N, r.Held, r.CancelRequests, r.Answers, r.AllAnswerMs, r.AgentCPUMs, r.AgentSwitches, r.ClientCPUMs, r.Load)
		if r.Error != "" {
			fmt.Fprintf(&b, "%-20s   error: %s\n", "", r.Error)
		}
	}
	fmt.Fprintf(&b, "\nmedians of the runs where every prompt was answered cancelled:\n")
	fmt.Fprintf(&b, "%-20s %5s %15s %13s %9s %11s %9s\n", "agent", "runs", "all answered ms", "agent cpu ms", "switches", "client cpu", "$/cancel")
	for _, a := range agents {
		var all, cpu, sw, ccpu, creq []float64
		for _, r := range complete(results, a.name) {
			all, cpu, ccpu = append(all, r.AllAnswerMs), append(cpu, r.AgentCPUMs), append(ccpu, r.ClientCPUMs)
			sw, creq = append(sw, float64(r.AgentSwitches)), append(creq, float64(r.CancelRequests))
		}
		if len(all) == 0 {
			fmt.Fprintf(&b, "%-20s %5d %15s\n", a.name, 0, "–")
			continue
		}
		fmt.Fprintf(&b, "%-20s %5d %15.1f %13.1f %9.0f %11.1f %9.0f\n", a.name, len(all), median(all), median(cpu), median(sw), median(ccpu), median(creq))
	}
	phaseTable(&b, results, agents)
	return b.String()
}

// complete returns the runs of agent in which every prompt was answered
// cancelled.
func complete(results []burstResult, agent string) []burstResult {
	var out []burstResult
	for _, r := range results {
		if r.Agent == agent && r.Answers == int64(r.N) {
			out = append(out, r)
		}
	}
	return out
}

// phaseTable writes, for each agent that stamped its phases, each phase's
// first, median and last stamp, each the median over the complete runs.
func phaseTable(b *strings.Builder, results []burstResult, agents []burstAgent) {
	for _, a := range agents {
		runs := complete(results, a.name)
		if len(runs) == 0 || len(runs[0].Phases) == 0 {
			continue
		}
		fmt.Fprintf(b, "\n%s, the phases: ms from the write of the cancels (medians of %d runs)\n", a.name, len(runs))
		fmt.Fprintf(b, "%-26s %6s %8s %8s %8s\n", "phase", "count", "first", "median", "last")
		for i, ph := range runs[0].Phases {
			var first, med, last, count []float64
			for _, r := range runs {
				if i < len(r.Phases) && r.Phases[i].Name == ph.Name {
					p := r.Phases[i]
					first, med, last, count = append(first, p.FirstMs), append(med, p.MedianMs), append(last, p.LastMs), append(count, float64(p.Count))
				}
			}
			fmt.Fprintf(b, "%-26s %6.0f %8.1f %8.1f %8.1f\n", ph.Name, median(count), median(first), median(med), median(last))
		}
		var all []float64
		for _, r := range runs {
			all = append(all, r.AllAnswerMs)
		}
		fmt.Fprintf(b, "%-26s %6d %8s %8s %8.1f\n", "answers read by the client", runs[0].N, "", "", median(all))
	}
}
