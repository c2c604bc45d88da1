package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"testing"
)

// BenchmarkProxyRoundTrip measures a request and its answer between a
// client and the test agent, straight over the agent's pipes and through
// the proxy: the difference is what the proxy adds to each message's way.
func BenchmarkProxyRoundTrip(b *testing.B) {
	env := []string{agentEnv + "=correct"}
	b.Run("direct", func(b *testing.B) {
		agent, err := startAgent([]string{os.Args[0]}, env, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer agent.stop(defaultStop)
		roundTrips(b, agent.stdin, bufio.NewReader(agent.stdout))
		agent.stdin.Close()
	})
	b.Run("proxy", func(b *testing.B) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := runProxy(context.Background(), proxyOptions{Argv: []string{os.Args[0]}, Env: env}, inR, outW, io.Discard, func(violation) {})
			outW.Close()
			done <- err
		}()
		roundTrips(b, inW, bufio.NewReader(outR))
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	})
}

// roundTrips sends b.N requests one after the other, each once the last
// was answered.
func roundTrips(b *testing.B, w io.Writer, r *bufio.Reader) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"_x/ping","params":{}}`+"\n", i); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
}
