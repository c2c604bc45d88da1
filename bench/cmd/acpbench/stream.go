package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acpkit/acprpc/bench"
	"github.com/acpkit/acprpc/bench/remotebench"
)

// The token stream and the stop under it, over stdio: one raw-wire client,
// written here so that every agent meets the same one, drives each peer's
// stream agent (bench/stream.go, ts/stream-agent.mjs), a fresh process per
// run, the runs interleaved peer after peer. In each run:
//
//   - the stream: turns of -chunks agent_message_chunk updates of 16 to 64
//     bytes, then end_turn, read as fast as the client can; the updates
//     per second from the prompt's write to its answer's read, and the
//     agent's CPU (every thread) and heap allocations (Go agents) per
//     update; then the same with a tool_call_update every 50 chunks;
//   - the stop: -cancels turns, each cancelled with session/cancel once a
//     random number of its updates has been read: the time from the
//     cancel's write to the answer's read, and the updates read after the
//     cancel;
//   - a slow reader: a turn read at -pace updates a second for -slow, the
//     agent's resident memory sampled every 100 ms, then cancelled, the
//     client keeping its pace until the answer (for at most -stopwait; what
//     is left is then read at full speed): the stop time, the peak memory,
//     and every update in order, none lost.
//
// Every update is checked: chunk i of a turn is the i-th chunk read.

// streamPeer is one row: an agent's command line, and the transport its
// client speaks: stdio, or remotebench.WebSocket or remotebench.HTTP to the
// endpoint the agent prints as its first line.
type streamPeer struct{ name, argv, transport string }

var streamPeerNames = []string{"acprpc", "coder", "ts", "lsp", "jrpc2", "xexp", "sourcegraph", "handoff", "echo", "acprpc-unbounded", "acprpc-nowait", unsentPeer + "<N>", "acprpc-ws", "ts-ws", "acprpc-http", "ts-http"}

// unsentPeer followed by a positive number N names acprpc's stream agent
// with Options.MaxUnsentNotifications N (cmd/server -max-unsent N): the
// bound's candidates side by side with the default.
const unsentPeer = "acprpc-unsent"

const stdio = "stdio"

func streamPeers(cfg *config, names []string) ([]streamPeer, error) {
	acprpcRemote := cfg.remoteServer + " -stream"
	tsRemote := cfg.node + " " + filepath.Join(cfg.tsDir, "remote-agent.mjs") + " stream"
	argv := map[string]string{
		"acprpc-unbounded": cfg.server + " -peer acprpc -stream -unbounded",
		"acprpc-nowait":    cfg.server + " -peer acprpc -stream -unread-input-wait -1ns",
		"ts":               cfg.node + " " + filepath.Join(cfg.tsDir, "stream-agent.mjs"),
		"acprpc-ws":        acprpcRemote,
		"ts-ws":            tsRemote,
		"acprpc-http":      acprpcRemote,
		"ts-http":          tsRemote,
	}
	for _, name := range bench.StreamPeers() {
		argv[name] = cfg.server + " -peer " + name + " -stream"
	}
	for _, name := range names {
		if n, err := strconv.Atoi(strings.TrimPrefix(name, unsentPeer)); strings.HasPrefix(name, unsentPeer) && err == nil && n > 0 {
			argv[name] = cfg.server + " -peer acprpc -stream -max-unsent " + strconv.Itoa(n)
		}
	}
	return pick("stream", argv, names, streamPeerNames, func(name, argv string) streamPeer {
		transport := stdio
		if base, t, ok := strings.Cut(name, "-"); ok && (base == "acprpc" || base == "ts") && (t == remotebench.WebSocket || t == remotebench.HTTP) {
			transport = t
		}
		return streamPeer{name, argv, transport}
	})
}

// tsPeer reports whether peer is the TypeScript SDK's agent.
func (p streamPeer) tsPeer() bool { return p.name == "ts" || strings.HasPrefix(p.name, "ts-") }

// stops reports whether peer can stop a turn: the echo floor reads nothing
// while it streams, so it runs the stream's rates only.
func (p streamPeer) stops() bool { return p.name != "echo" }

type streamConfig struct {
	chunks, turns, cancels, pace int
	slow, stopWait               time.Duration
	many, manyChunks             int    // sessions streaming at once, and each one's chunks; 0 sessions: none; stdio only
	name                         string // of the record: NAME.txt and NAME.json
}

// streamRun is one peer's figures in one run.
type streamRun struct {
	Peer string `json:"peer"`
	Run  int    `json:"run"`
	// The stream, plain and with a tool_call_update every 50 chunks: the
	// median over the run's turns. Allocations are -1 for an agent not in Go.
	Rate       float64   `json:"updatesPerSec"`
	RateTool   float64   `json:"updatesPerSecTools"`
	CPUUs      float64   `json:"agentCpuUsPerUpdate"`
	CPUUsTool  float64   `json:"agentCpuUsPerUpdateTools"`
	Allocs     float64   `json:"agentAllocsPerUpdate"`
	AllocsTool float64   `json:"agentAllocsPerUpdateTools"`
	StopMs     []float64 `json:"stopMs"`             // each cancelled turn's stop time
	After      []int     `json:"updatesAfterCancel"` // each cancelled turn's updates read after the cancel
	// Go agents: for each cancelled turn, ms from the cancel's write to the
	// agent reading it, and from then to the turn's handler seeing it.
	ReadMs     []float64 `json:"cancelReadMs,omitempty"`
	SeenMs     []float64 `json:"cancelSeenMs,omitempty"`
	EndedFirst int       `json:"endedBeforeCancel"`      // cancelled turns answered end_turn: over before the cancel was read
	SlowStopMs float64   `json:"slowStopMs"`             // -1: not answered within -stopwait
	SlowAfter  int       `json:"slowUpdatesAfterCancel"` // read after the cancel, paced or not
	SlowRSSKiB []int64   `json:"slowRssKiB"`             // every 100 ms while the slow reader reads
	SlowRead   int       `json:"slowUpdatesRead"`
	// Many sessions streaming at once, the first cancelled once it has
	// sent a quarter of its chunks: its stop time, and the others'
	// updates per second, all of them, from the prompts' write to the last
	// answer.
	ManyStopMs float64 `json:"manyStopMs"`
	ManyRate   float64 `json:"manyOthersUpdatesPerSec"`
	ManyAfter  int     `json:"manyUpdatesAfterCancel"`
	ManyEnded  bool    `json:"manyEndedBeforeCancel"`
	LoadStart  string  `json:"loadStart"`
	LoadEnd    string  `json:"loadEnd"`
	Error      string  `json:"error,omitempty"`
}

func runStream(cfg *config, peers []streamPeer, runs int, sc streamConfig) error {
	var results []streamRun
	for run := 1; run <= runs; run++ {
		for _, p := range peers {
			if p.tsPeer() && !tsAvailable(cfg) {
				continue
			}
			res := streamRun{Peer: p.name, Run: run, LoadStart: loadavg()}
			if err := streamOne(p, sc, run, &res); err != nil {
				res.Error = err.Error()
				fmt.Fprintf(os.Stderr, "stream %s run %d: %v\n", p.name, run, err)
			}
			res.LoadEnd = loadavg()
			fmt.Fprintf(os.Stderr, "stream %s run %d: %.0f updates/s, %.0f with tools, stop p50 %.1f ms, slow stop %.0f ms, peak %d KiB (load %s → %s)\n",
				p.name, run, res.Rate, res.RateTool, median(res.StopMs), res.SlowStopMs, slices.Max(append(res.SlowRSSKiB, 0)), res.LoadStart, res.LoadEnd)
			results = append(results, res)
		}
	}
	return writeResults(cfg, sc.name, results, streamTable(results, peers, runs, sc))
}

func loadavg() string { return strings.Join(strings.Fields(readString("/proc/loadavg"))[:3], " ") }

// streamClient is the raw-wire client of one spawned agent.
type streamClient struct {
	p       *proc
	w       msgWire
	session string
	nextID  int
}

// msgWire carries the client's JSON-RPC messages, one at a time, as the
// transport frames them.
type msgWire interface {
	send(msg string) error
	next() ([]byte, error) // the agent's next message, valid until the next call
}

// stdioWire is newline-delimited JSON on the agent's stdin and stdout.
type stdioWire struct {
	w *os.File
	r *bufio.Reader
}

func (s stdioWire) send(msg string) error {
	_, err := s.w.WriteString(msg + "\n")
	return err
}

func (s stdioWire) next() ([]byte, error) { return s.r.ReadSlice('\n') }

// remoteWire is a WebSocket or Streamable HTTP connection of
// remotebench's raw client, over HTTP reading the session's own SSE stream.
type remoteWire struct{ c *remotebench.Client }

func (r remoteWire) send(msg string) error { return r.c.Send(context.Background(), []byte(msg)) }
func (r remoteWire) next() ([]byte, error) { return r.c.Recv() }

// connect opens the client's session with the agent p over transport:
// over stdio it writes initialize and session/new; otherwise the agent's
// first line is its endpoint, which remotebench.Dial opens (initialize and
// session/new, and over Streamable HTTP the session's SSE stream).
func connect(p *proc, transport string) (*streamClient, func(), error) {
	r := bufio.NewReaderSize(p.stdout, 4<<10)
	if transport == stdio {
		c := &streamClient{p: p, w: stdioWire{p.stdin, r}, nextID: 1}
		return c, func() {}, c.handshake()
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, nil, fmt.Errorf("the agent printed no endpoint: %w", err)
	}
	hc := remotebench.NewHTTPClient()
	rc, err := remotebench.Dial(context.Background(), transport, strings.TrimSpace(line), hc)
	if err != nil {
		return nil, nil, err
	}
	closeAll := func() {
		_ = rc.Close()
		hc.CloseIdleConnections()
	}
	// Over both transports session/new was the client's second request.
	return &streamClient{p: p, w: remoteWire{rc}, session: rc.Session(), nextID: 2}, closeAll, nil
}

func streamOne(peer streamPeer, sc streamConfig, run int, res *streamRun) error {
	p, err := spawn(strings.Fields(peer.argv))
	if err != nil {
		return err
	}
	defer p.close()
	c, closeConn, err := connect(p, peer.transport)
	if err != nil {
		return err
	}
	defer closeConn()
	goAgent := !peer.tsPeer()
	rng := rand.New(rand.NewPCG(uint64(run), 38))
	// Warm up, then the stream, plain and with tool calls.
	if _, err := c.turn(bench.StreamSpec{N: 2000, Seed: 1}, -1, 0); err != nil {
		return err
	}
	c.allocsStamp(goAgent) // the warm-up's
	for _, tool := range []int{0, 50} {
		var rates, cpus, allocs []float64
		for range sc.turns {
			spec := bench.StreamSpec{N: sc.chunks, Tool: tool, Seed: rng.Uint32() >> 1}
			cpu0, _ := procSched(strconv.Itoa(p.cmd.Process.Pid))
			t, err := c.turn(spec, -1, 0)
			if err != nil {
				return err
			}
			cpu1, _ := procSched(strconv.Itoa(p.cmd.Process.Pid))
			updates := float64(t.updates)
			rates = append(rates, updates/t.elapsed.Seconds())
			cpus = append(cpus, float64(cpu1-cpu0)/1e3/updates)
			// The next prompt's stamp closes this turn's allocations.
			if _, err := c.turn(bench.StreamSpec{}, -1, 0); err != nil {
				return err
			}
			a0, a1 := c.allocsStamp(goAgent), c.allocsStamp(goAgent)
			allocs = append(allocs, float64(a1-a0)/updates)
			if !goAgent {
				allocs[len(allocs)-1] = -1
			}
		}
		if tool == 0 {
			res.Rate, res.CPUUs, res.Allocs = median(rates), median(cpus), median(allocs)
		} else {
			res.RateTool, res.CPUUsTool, res.AllocsTool = median(rates), median(cpus), median(allocs)
		}
	}
	if !peer.stops() {
		return nil
	}
	// The stop under the stream.
	for range sc.cancels {
		spec := bench.StreamSpec{N: sc.chunks, Seed: rng.Uint32() >> 1}
		at := 100 + rng.IntN(sc.chunks*9/10-100)
		t, err := c.turn(spec, at, 0)
		if err != nil {
			return err
		}
		c.allocsStamp(goAgent)
		if goAgent && t.stopReason == bench.StopCancelled {
			read := c.stampAfter(c.p.started, t.cancelMono)
			seen := c.stampAfter(c.p.seen, read)
			if read > 0 && seen > 0 {
				res.ReadMs = append(res.ReadMs, float64(read-t.cancelMono)/1e6)
				res.SeenMs = append(res.SeenMs, float64(seen-read)/1e6)
			}
		}
		res.StopMs = append(res.StopMs, ms(t.stop))
		res.After = append(res.After, t.after)
		if t.stopReason == bench.StopEndTurn {
			res.EndedFirst++
		}
	}
	// Many sessions, one stopped.
	if sc.many > 0 && peer.transport == stdio {
		m, err := c.manySessions(sc.many, sc.manyChunks, rng)
		if err != nil {
			return err
		}
		for range sc.many {
			c.allocsStamp(goAgent)
		}
		res.ManyStopMs, res.ManyRate, res.ManyAfter, res.ManyEnded = ms(m.stop), m.othersRate, m.after, m.endedFirst
	}
	if sc.slow > 0 {
		return c.slowReader(p.cmd.Process.Pid, sc, goAgent, res)
	}
	return nil
}

// slowReader runs the slow reader's turn.
func (c *streamClient) slowReader(pid int, sc streamConfig, goAgent bool, res *streamRun) error {
	stopSampling := make(chan struct{})
	sampled := make(chan []int64)
	go func() {
		var rss []int64
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			rss = append(rss, residentKiB(pid))
			select {
			case <-tick.C:
			case <-stopSampling:
				sampled <- rss
				return
			}
		}
	}()
	t, err := c.turn(bench.StreamSpec{N: 1_000_000, Seed: 5}, sc.pace*int(sc.slow/time.Millisecond)/1000,
		time.Second/time.Duration(sc.pace), sc.stopWait)
	close(stopSampling)
	res.SlowRSSKiB = <-sampled
	if err != nil {
		return err
	}
	c.allocsStamp(goAgent)
	res.SlowStopMs, res.SlowAfter, res.SlowRead = ms(t.stop), t.after, t.updates
	if t.gaveUp {
		res.SlowStopMs = -1
	}
	return nil
}

// allocsStamp takes the next "M" stamp of a Go agent, 0 for another.
func (c *streamClient) allocsStamp(goAgent bool) int64 {
	if !goAgent {
		return 0
	}
	select {
	case v := <-c.p.allocs:
		return v
	case <-time.After(5 * time.Second):
		return 0
	}
}

// stampAfter takes the next stamp of ch, a Go agent's, taken at or after
// floor, or 0 if none comes soon: a stamp of an earlier turn (the cancel
// of a turn that ended first, read after its answer) is dropped.
func (c *streamClient) stampAfter(ch chan int64, floor int64) int64 {
	timeout := time.After(time.Second)
	for {
		select {
		case v := <-ch:
			if v >= floor {
				return v
			}
		case <-timeout:
			return 0
		}
	}
}

// dropStamps empties the channels of the stop's stamps.
func (c *streamClient) dropStamps() {
	for {
		select {
		case <-c.p.started:
		case <-c.p.seen:
		default:
			return
		}
	}
}

func (c *streamClient) send(msg string) error { return c.w.send(msg) }

// call writes a request and reads until its answer, which it returns.
func (c *streamClient) call(method, params string) ([]byte, error) {
	id := c.nextID
	c.nextID++
	if err := c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)); err != nil {
		return nil, err
	}
	want := []byte(fmt.Sprintf(`"id":%d,`, id))
	for {
		line, err := c.w.next()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if bytes.Contains(line, want) {
			return bytes.Clone(line), nil
		}
	}
}

func (c *streamClient) handshake() error {
	if _, err := c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`); err != nil {
		return err
	}
	line, err := c.call("session/new", `{"cwd":"/","mcpServers":[]}`)
	c.session = sessionOf(line)
	return err
}

type turnResult struct {
	cancelMono            int64 // the cancel's write, bench.MonoNow
	updates, tools, after int
	elapsed, stop         time.Duration
	stopReason            string
	gaveUp                bool // the paced reader stopped pacing after stopWait
}

var (
	chunkKey  = []byte(`"agent_message_chunk"`)
	toolKey   = []byte(`"tool_call_update"`)
	textKey   = []byte(`"text":"`)
	stopKey   = []byte(`"stopReason":"`)
	updateKey = []byte(`"method":"session/update"`)
)

// turn runs one prompt turn: it writes session/cancel once cancelAt chunks
// have been read (never for a negative cancelAt), reads one update per
// pace (none: at full speed), and checks every chunk's number. A paced
// reader still unanswered stopWait[0] after its cancel reads the rest at
// full speed.
func (c *streamClient) turn(spec bench.StreamSpec, cancelAt int, pace time.Duration, stopWait ...time.Duration) (turnResult, error) {
	var t turnResult
	c.dropStamps()
	id := c.nextID
	c.nextID++
	answer := []byte(fmt.Sprintf(`"id":%d,`, id))
	start := time.Now()
	prompt := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, id, c.session, spec.Text())
	if err := c.send(prompt); err != nil {
		return t, err
	}
	var cancelled time.Time
	next := start
	for {
		line, err := c.w.next()
		if err != nil {
			return t, fmt.Errorf("turn: %w (%d updates read)", err, t.updates)
		}
		switch {
		case bytes.Contains(line, updateKey):
			if bytes.Contains(line, toolKey) {
				t.tools++
			} else if bytes.Contains(line, chunkKey) {
				if n := chunkNumber(line); n != t.updates-t.tools {
					return t, fmt.Errorf("chunk %d read as the %d-th: lost or out of order", n, t.updates-t.tools)
				}
			}
			t.updates++
			if !cancelled.IsZero() {
				t.after++
			}
		case bytes.Contains(line, answer):
			now := time.Now()
			t.elapsed = now.Sub(start)
			if i := bytes.Index(line, stopKey); i >= 0 {
				rest := line[i+len(stopKey):]
				t.stopReason = string(rest[:bytes.IndexByte(rest, '"')])
			}
			if !cancelled.IsZero() {
				t.stop = now.Sub(cancelled)
			}
			// A turn cancelled may have ended before its cancel was read.
			if t.stopReason != bench.StopEndTurn && (cancelAt < 0 || t.stopReason != bench.StopCancelled) {
				return t, fmt.Errorf("turn answered %q: %s", t.stopReason, line)
			}
			return t, nil
		}
		if cancelAt >= 0 && cancelled.IsZero() && t.updates-t.tools >= cancelAt {
			// Stamped before the write: over Streamable HTTP the send is a
			// POST whose 202 comes once the agent has taken the message in.
			cancelled, t.cancelMono = time.Now(), bench.MonoNow()
			if err := c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + c.session + `"}}`); err != nil {
				return t, err
			}
		}
		if pace > 0 && !t.gaveUp {
			if !cancelled.IsZero() && len(stopWait) > 0 && time.Since(cancelled) > stopWait[0] {
				t.gaveUp = true
				continue
			}
			next = next.Add(pace)
			time.Sleep(time.Until(next))
		}
	}
}

type manyResult struct {
	stop       time.Duration
	othersRate float64
	after      int  // the cancelled session's updates read after its cancel
	endedFirst bool // its turn answered end_turn: it was over before the cancel was read
}

var sessionKey = []byte(`"sessionId":"`)

// manySessions opens n sessions, starts a turn of chunks on each at once,
// cancels the first once it has read a quarter of that session's chunks,
// and reads until every turn is answered, checking each session's chunks in
// order.
func (c *streamClient) manySessions(n, chunks int, rng *rand.Rand) (manyResult, error) {
	var m manyResult
	index := map[string]int{}
	ids := make([]string, n)
	for i := range ids {
		line, err := c.call("session/new", `{"cwd":"/","mcpServers":[]}`)
		if err != nil {
			return m, err
		}
		ids[i] = sessionOf(line)
		index[ids[i]] = i
	}
	firstID := c.nextID
	var prompts strings.Builder
	for i, sid := range ids {
		spec := bench.StreamSpec{N: chunks, Seed: rng.Uint32() >> 1}
		fmt.Fprintf(&prompts, `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`+"\n",
			firstID+i, sid, spec.Text())
	}
	c.nextID += n
	start := time.Now()
	if err := c.send(strings.TrimSuffix(prompts.String(), "\n")); err != nil { // one write, every prompt
		return m, err
	}
	read := make([]int, n)
	answered, others := 0, 0
	var cancelled time.Time
	for answered < n {
		line, err := c.w.next()
		if err != nil {
			return m, fmt.Errorf("many: %w", err)
		}
		if bytes.Contains(line, updateKey) {
			i, ok := index[sessionOf(line)]
			if !ok {
				return m, fmt.Errorf("many: an update of no session: %s", line)
			}
			if got := chunkNumber(line); got != read[i] {
				return m, fmt.Errorf("many: session %s's chunk %d read as its %d-th", ids[i], got, read[i])
			}
			read[i]++
			if i != 0 {
				others++
			} else if !cancelled.IsZero() {
				m.after++
			}
			if i == 0 && read[0] == chunks/4 {
				if err := c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + ids[0] + `"}}`); err != nil {
					return m, err
				}
				cancelled = time.Now()
			}
			continue
		}
		if bytes.Contains(line, stopKey) {
			answered++
			if bytes.Contains(line, []byte(fmt.Sprintf(`"id":%d,`, firstID))) {
				m.stop = time.Since(cancelled)
				m.endedFirst = bytes.Contains(line, []byte(`"end_turn"`))
			}
		}
	}
	m.othersRate = float64(others) / time.Since(start).Seconds()
	return m, nil
}

// sessionOf is the sessionId in a line, or "".
func sessionOf(line []byte) string {
	i := bytes.Index(line, sessionKey)
	if i < 0 {
		return ""
	}
	rest := line[i+len(sessionKey):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// chunkNumber reads the number at the head of a chunk's text, or -1.
func chunkNumber(line []byte) int {
	i := bytes.Index(line, textKey)
	if i < 0 {
		return -1
	}
	rest := line[i+len(textKey):]
	j := bytes.IndexByte(rest, ':')
	if j < 0 {
		return -1
	}
	n, err := strconv.Atoi(string(rest[:j]))
	if err != nil {
		return -1
	}
	return n
}

// residentKiB is process pid's resident set (VmRSS), or -1.
func residentKiB(pid int) int64 {
	for _, line := range strings.Split(readString(fmt.Sprintf("/proc/%d/status", pid)), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

func streamTable(results []streamRun, peers []streamPeer, runs int, sc streamConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The token stream over %s, %d interleaved runs, each peer's agent a process of its own, one raw-wire client.\n", transportsOf(peers), runs)
	by := map[string][]streamRun{}
	for _, r := range results {
		if r.Error == "" {
			by[r.Peer] = append(by[r.Peer], r)
		}
	}
	if sc.turns > 0 {
		streamRateTable(&b, by, peers, sc)
	}
	if sc.cancels > 0 {
		streamStopTable(&b, by, peers, sc)
	}
	if sc.slow > 0 {
		slowReaderTable(&b, by, peers, sc)
	}
	if sc.many > 0 && slices.ContainsFunc(peers, func(p streamPeer) bool { return p.transport == stdio }) {
		manyTable(&b, by, peers, sc)
	}
	var failed []string
	for _, r := range results {
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("%s run %d: %s", r.Peer, r.Run, r.Error))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\nFailed runs (left out above):\n  %s\n", strings.Join(failed, "\n  "))
	}
	return b.String()
}

// col is a column's cell: the median of f over the runs, and their range.
func col(rs []streamRun, f func(streamRun) float64, format string) string {
	var v []float64
	for _, r := range rs {
		v = append(v, f(r))
	}
	if len(v) == 0 {
		return "-"
	}
	if v[0] == -1 {
		return "n/a"
	}
	return fmt.Sprintf(format+" ["+format+"-"+format+"]", median(v), slices.Min(v), slices.Max(v))
}

// streamRateTable writes the stream's rates.
func streamRateTable(b *strings.Builder, by map[string][]streamRun, peers []streamPeer, sc streamConfig) {
	fmt.Fprintf(b, "Stream: turns of %d agent_message_chunk updates of 16-64 bytes, then end_turn; median of the runs' medians [range];\n", sc.chunks)
	fmt.Fprintf(b, "\"+tools\" adds a tool_call_update after every 50 chunks. CPU: the agent's, every thread, per update; allocs: its heap objects per update.\n\n")
	fmt.Fprintf(b, "%-17s %-22s %-22s %-18s %-18s %-14s %-14s\n", "peer", "updates/s", "+tools updates/s", "cpu µs/update", "+tools cpu µs", "allocs/update", "+tools allocs")
	for _, p := range peers {
		rs := by[p.name]
		fmt.Fprintf(b, "%-17s %-22s %-22s %-18s %-18s %-14s %-14s\n", p.name,
			col(rs, func(r streamRun) float64 { return r.Rate }, "%.0f"),
			col(rs, func(r streamRun) float64 { return r.RateTool }, "%.0f"),
			col(rs, func(r streamRun) float64 { return r.CPUUs }, "%.2f"),
			col(rs, func(r streamRun) float64 { return r.CPUUsTool }, "%.2f"),
			col(rs, func(r streamRun) float64 { return r.Allocs }, "%.1f"),
			col(rs, func(r streamRun) float64 { return r.AllocsTool }, "%.1f"))
	}
}

// streamStopTable writes the stop under the stream, and where its time
// goes.
func streamStopTable(b *strings.Builder, by map[string][]streamRun, peers []streamPeer, sc streamConfig) {
	fmt.Fprintf(b, "\nThe stop under the stream: %d turns per run cancelled at a random chunk (100 to %d), all runs pooled:\n", sc.cancels, sc.chunks*9/10)
	fmt.Fprintf(b, "ms from session/cancel written to the answer read, and the updates read after the cancel; \"ended first\": turns\n")
	fmt.Fprintf(b, "answered end_turn, over before the agent read the cancel (counted in the stop times too).\n\n")
	fmt.Fprintf(b, "%-17s %6s %9s %9s %9s %12s %12s %12s %11s\n", "peer", "turns", "stop p50", "stop p99", "worst", "after p50", "after p99", "after worst", "ended first")
	for _, p := range peers {
		var stops, after []float64
		ended := 0
		for _, r := range by[p.name] {
			ended += r.EndedFirst
			stops = append(stops, r.StopMs...)
			for _, a := range r.After {
				after = append(after, float64(a))
			}
		}
		if len(stops) == 0 {
			fmt.Fprintf(b, "%-17s -\n", p.name)
			continue
		}
		fmt.Fprintf(b, "%-17s %6d %9.2f %9.2f %9.2f %12.0f %12.0f %12.0f %11d\n", p.name, len(stops),
			quantile(stops, .5), quantile(stops, .99), slices.Max(stops), quantile(after, .5), quantile(after, .99), slices.Max(after), ended)
	}
	fmt.Fprintf(b, "\nWhere the stop's time goes, Go agents: ms from the cancel's write to the agent's reading it (acprpc: its\n")
	fmt.Fprintf(b, "read loop; coder: its Cancel callback), and from then to the turn's handler seeing it (its update refused).\n\n")
	fmt.Fprintf(b, "%-17s %6s %10s %10s %10s %10s %10s %10s\n", "peer", "turns", "read p50", "read p99", "read worst", "seen p50", "seen p99", "seen worst")
	for _, p := range peers {
		var read, seen []float64
		for _, r := range by[p.name] {
			read, seen = append(read, r.ReadMs...), append(seen, r.SeenMs...)
		}
		if len(read) == 0 {
			continue
		}
		fmt.Fprintf(b, "%-17s %6d %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f\n", p.name, len(read),
			quantile(read, .5), quantile(read, .99), slices.Max(read), quantile(seen, .5), quantile(seen, .99), slices.Max(seen))
	}
}

// slowReaderTable writes the slow reader's figures.
func slowReaderTable(b *strings.Builder, by map[string][]streamRun, peers []streamPeer, sc streamConfig) {
	fmt.Fprintf(b, "\nA slow reader: %d updates/s for %s, then session/cancel, the reader keeping its pace (at most %s, then full speed);\n", sc.pace, sc.slow, sc.stopWait)
	fmt.Fprintf(b, "the agent's resident memory sampled every 100 ms. Median [range] over the runs; every update checked in order.\n\n")
	fmt.Fprintf(b, "%-17s %-24s %-24s %-22s %-10s\n", "peer", "peak RSS MiB", "last-first RSS MiB", "stop ms", "after")
	for _, p := range peers {
		if !p.stops() {
			continue
		}
		rs := by[p.name]
		fmt.Fprintf(b, "%-17s %-24s %-24s %-22s %-10s\n", p.name,
			col(rs, func(r streamRun) float64 { return float64(slices.Max(append(r.SlowRSSKiB, 0))) / 1024 }, "%.1f"),
			col(rs, func(r streamRun) float64 {
				if len(r.SlowRSSKiB) == 0 {
					return 0
				}
				return float64(r.SlowRSSKiB[len(r.SlowRSSKiB)-1]-r.SlowRSSKiB[0]) / 1024
			}, "%.1f"),
			col(rs, func(r streamRun) float64 { return r.SlowStopMs }, "%.0f"),
			col(rs, func(r streamRun) float64 { return float64(r.SlowAfter) }, "%.0f"))
	}
}

// manyTable writes many streams, one stopped.
func manyTable(b *strings.Builder, by map[string][]streamRun, peers []streamPeer, sc streamConfig) {
	fmt.Fprintf(b, "\nMany streams, one stopped: %d sessions each streaming %d chunks at once, the first cancelled once a quarter\n", sc.many, sc.manyChunks)
	fmt.Fprintf(b, "of its chunks was read: its stop time, its updates read after the cancel, and the others' updates/s (all of\n")
	fmt.Fprintf(b, "them, prompts written to last answer read). Median [range] over the runs.\n\n")
	fmt.Fprintf(b, "%-17s %-22s %-22s %-26s %s\n", "peer", "stop ms", "after", "others' updates/s", "ended first")
	for _, p := range peers {
		if p.transport != stdio || !p.stops() {
			continue // many sessions run over stdio only, on agents that stop
		}
		rs := by[p.name]
		ended := 0
		for _, r := range rs {
			if r.ManyEnded {
				ended++
			}
		}
		fmt.Fprintf(b, "%-17s %-22s %-22s %-26s %d of %d\n", p.name,
			col(rs, func(r streamRun) float64 { return r.ManyStopMs }, "%.1f"),
			col(rs, func(r streamRun) float64 { return float64(r.ManyAfter) }, "%.0f"),
			col(rs, func(r streamRun) float64 { return r.ManyRate }, "%.0f"), ended, len(rs))
	}
}

// transportsOf names the transports of peers, for a table's title.
func transportsOf(peers []streamPeer) string {
	names := map[string]string{stdio: "stdio", remotebench.WebSocket: "WebSocket", remotebench.HTTP: "Streamable HTTP (the session's own SSE stream)"}
	var seen []string
	for _, p := range peers {
		if n := names[p.transport]; !slices.Contains(seen, n) {
			seen = append(seen, n)
		}
	}
	return strings.Join(seen, " and ")
}

// quantile is the q-quantile of v, the nearest rank.
func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}
