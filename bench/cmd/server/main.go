// Command server serves the benchmark workload over stdio with one peer's
// agent side: requests on stdin, answers and notifications on stdout.
//
// For the cancel-latency measurement it writes one line to stderr when a
// blocking prompt starts ("B <unix ns>") and one when that prompt's context
// fires ("C <unix ns>"). It exits when stdin ends.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/bench"
)

func main() {
	name := flag.String("peer", "", "peer to serve with")
	linger := flag.Duration("linger", 0, "how long to keep answering after stdin ends")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	traceFile := flag.String("trace", "", "write an execution trace of the whole run to this file")
	turns := flag.Bool("turns", false, "serve the turn workload instead (coder or acprpc): each prompt asks the client for permission and a terminal, then waits for its cancel")
	stopped := flag.Bool("stopped", true, "with -turns: a cancelled turn sends a last update saying so before it answers, as examples/agent's does; false answers at once, as coder's example agent does")
	stream := flag.Bool("stream", false, "serve the stream workload instead (acprpc, coder, the JSON-RPC peers jrpc2, lsp, sourcegraph and xexp, or the floors echo and handoff): each prompt streams the chunks its text asks for, then ends end_turn, or cancelled once cancelled")
	var sf streamFlags
	flag.BoolVar(&sf.unbounded, "unbounded", false, "with -stream -peer acprpc: no bound on the unsent notifications, as before Notify waited for room")
	flag.IntVar(&sf.maxUnsent, "max-unsent", 0, "with -stream -peer acprpc: Options.MaxUnsentNotifications (0: the default), to measure a bound against another")
	flag.DurationVar(&sf.unreadWait, "unread-input-wait", 0, "with -stream -peer acprpc: Options.UnreadInputWait (0: the default; negative: notifications never wait for the client's unread input, as before)")
	graceful := flag.Bool("graceful", true, "with -turns -peer acprpc: after a cancel, wait for the client to answer the requests it cut short, as examples/agent does")
	flag.Parse()
	defer record(*cpuProfile, *traceFile)()
	if *turns {
		serveTurns(*name, *graceful, *stopped)
		return
	}
	if *stream {
		serveStream(*name, sf)
		return
	}
	p, ok := bench.Lookup(*name)
	if !ok {
		fmt.Fprintf(os.Stderr, "server: unknown peer %q; known:", *name)
		for _, p := range bench.Peers() {
			fmt.Fprintf(os.Stderr, " %s", p.Name())
		}
		fmt.Fprintln(os.Stderr)
		os.Exit(2)
	}
	var mu sync.Mutex
	stamp := func(tag byte) {
		b := make([]byte, 0, 24)
		b = append(b, tag, ' ')
		b = strconv.AppendInt(b, bench.MonoNow(), 10)
		b = append(b, '\n')
		mu.Lock()
		_, _ = os.Stderr.Write(b)
		mu.Unlock()
	}
	wl := &bench.Workload{
		OnBlock:  func() { stamp('B') },
		OnCancel: func() { stamp('C') },
	}
	in := &eofReader{r: os.Stdin, done: make(chan struct{})}
	srv := p.Serve(in, os.Stdout, wl)
	<-in.done
	time.Sleep(*linger)
	_ = srv.Close()
}

// record starts a CPU profile and an execution trace into the files named
// (none for ""); the returned function stops both.
func record(cpuProfile, traceFile string) (stop func()) {
	var stops []func()
	open := func(name string) *os.File {
		f, err := os.Create(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
			os.Exit(2)
		}
		return f
	}
	if cpuProfile != "" {
		f := open(cpuProfile)
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
			os.Exit(2)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if traceFile != "" {
		f := open(traceFile)
		if err := trace.Start(f); err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
			os.Exit(2)
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// eofReader closes done when its reader first fails, usually at EOF.
type eofReader struct {
	r    io.Reader
	once sync.Once
	done chan struct{}
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.done) })
	}
	return n, err
}

// streamFlags are the flags that set acprpc's options for the stream
// agent, to measure them against its defaults.
type streamFlags struct {
	unbounded  bool
	maxUnsent  int
	unreadWait time.Duration
}

// options returns the acprpc options the flags ask for, or nil if they ask
// for none.
func (f streamFlags) options() *acprpc.Options {
	if !f.unbounded && f.maxUnsent == 0 && f.unreadWait == 0 {
		return nil
	}
	o := &acprpc.Options{MaxUnsentNotifications: f.maxUnsent, UnreadInputWait: f.unreadWait}
	if f.unbounded {
		o.MaxUnsentNotifications, o.MaxUnsentNotificationBytes = math.MaxInt, math.MaxInt
	}
	return o
}

// serveStream serves the stream workload with peer name until stdin ends;
// acprpc with the options the flags set, if any.
func serveStream(name string, f streamFlags) {
	opts := f.options()
	if name == "acprpc" && opts != nil {
		<-bench.ServeAcprpcStream(os.Stdin, os.Stdout, opts)
		return
	}
	serve, ok := bench.LookupStream(name)
	if !ok || opts != nil || f.maxUnsent < 0 {
		fmt.Fprintf(os.Stderr, "server: -stream is for -peer %s (-unbounded, -max-unsent and -unread-input-wait for acprpc only)\n", strings.Join(bench.StreamPeers(), ", "))
		os.Exit(2)
	}
	<-serve(os.Stdin, os.Stdout)
}

// serveTurns serves the turn workload with peer name until stdin ends. For
// acprpc it then writes each phase's stamps to stderr, one line per phase:
// "P <phase> <count> <first> <median> <last>", CLOCK_MONOTONIC nanoseconds.
func serveTurns(name string, graceful, stopped bool) {
	switch name {
	case "coder":
		<-bench.ServeCoderTurns(os.Stdin, os.Stdout, stopped)
	case "acprpc":
		phases := bench.NewPhases(1 << 16)
		<-bench.ServeAcprpcTurns(os.Stdin, os.Stdout, graceful, stopped, phases)
		for ph := range bench.PhaseNames {
			s := phases.Stamps(bench.Phase(ph))
			if len(s) > 0 {
				fmt.Fprintf(os.Stderr, "P %d %d %d %d %d\n", ph, len(s), s[0], s[len(s)/2], s[len(s)-1])
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "server: -turns is for -peer coder or acprpc")
		os.Exit(2)
	}
}
