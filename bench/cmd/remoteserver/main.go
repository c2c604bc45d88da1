// Command remoteserver serves the remote benchmark's agent on acprpc
// (remotebench.NewServer: remote.Server with its defaults) over WebSocket
// and Streamable HTTP on a free loopback port. It prints the endpoint,
// http://127.0.0.1:PORT/acp, as its first line and exits when its stdin
// ends.
package main

import (
	"fmt"
	"io"
	"net"
	"os"

	"github.com/acpkit/acprpc/bench/remotebench"
	"github.com/acpkit/acprpc/remote"
)

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "remoteserver:", err)
		os.Exit(1)
	}
	srv := remotebench.NewServer()
	go func() { _ = srv.Serve(l) }()
	fmt.Printf("http://%s%s\n", l.Addr(), remote.DefaultPath)
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}
