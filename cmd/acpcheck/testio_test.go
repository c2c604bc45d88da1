package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readLines reads the lines of r as they come, until it ends.
func readLines(r io.Reader) <-chan string {
	out := make(chan string, 1024)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	return out
}

// awaitLine waits up to bound for a line holding want.
func awaitLine(t *testing.T, in <-chan string, want string, bound time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		select {
		case l, ok := <-in:
			require.True(t, ok, "the output ended with no line holding %s", want)
			if strings.Contains(l, want) {
				return l
			}
		case <-ctx.Done():
			t.Fatalf("no line holding %s within %s", want, bound)
		}
	}
}

func osArgs0() string { return os.Args[0] }

func readAll(r io.Reader) ([]byte, error) { return io.ReadAll(r) }
