// Command remoteserver serves the remote benchmark's agent on acprpc
// (remotebench.NewServer: remote.Server with its defaults) over WebSocket
// and Streamable HTTP on a free loopback port. It prints the endpoint,
// http://127.0.0.1:PORT/acp, as its first line and exits when its stdin
// ends. -cpuprofile writes a CPU profile of its whole run; -pprof serves
// net/http/pprof at another address, for heap and goroutine profiles while
// it runs. -stream serves the stream workload's agent instead
// (remotebench.NewStreamServer), for acpbench stream over WebSocket and
// Streamable HTTP.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // on http.DefaultServeMux, served only with -pprof
	"os"
	"runtime/pprof"

	"github.com/acpkit/acprpc/bench/remotebench"
	"github.com/acpkit/acprpc/remote"
)

func main() {
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof at this address")
	stream := flag.Bool("stream", false, "serve the stream workload's agent (bench.AcprpcStream) instead of the remote benchmark's")
	flag.Parse()
	if *pprofAddr != "" {
		go func() { fmt.Fprintln(os.Stderr, "remoteserver:", http.ListenAndServe(*pprofAddr, nil)) }()
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "remoteserver:", err)
			os.Exit(1)
		}
		defer f.Close()
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "remoteserver:", err)
		return
	}
	srv := remotebench.NewServer()
	if *stream {
		srv = remotebench.NewStreamServer()
	}
	go func() { _ = srv.Serve(l) }()
	fmt.Printf("http://%s%s\n", l.Addr(), remote.DefaultPath)
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}
