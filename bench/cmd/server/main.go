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
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/acpkit/acprpc/bench"
)

func main() {
	name := flag.String("peer", "", "peer to serve with")
	linger := flag.Duration("linger", 0, "how long to keep answering after stdin ends")
	flag.Parse()
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
