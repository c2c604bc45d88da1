//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// agentScript writes, in dir, the agent command a client is given: a
// script that runs acpcheck agent with args and then writes its exit status
// to a FIFO. The returned wait blocks until that write, so a test reads
// acpcheck's report once acpcheck has ended, though the client that
// started it may exit first; it fails after a minute with no write.
func agentScript(t *testing.T, dir string, args ...string) (path string, wait func() string) {
	t.Helper()
	exited := filepath.Join(dir, "exited")
	require.NoError(t, syscall.Mkfifo(exited, 0o600))
	quoted := ""
	for _, a := range args {
		quoted += fmt.Sprintf(" '%s'", a)
	}
	path = filepath.Join(dir, "acpcheck-agent")
	script := fmt.Sprintf("#!/bin/sh\nenv %s=1 '%s' agent%s\necho $? > '%s'\n", asAcpcheckEnv, os.Args[0], quoted, exited)
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	status := make(chan string, 1)
	go func() {
		f, err := os.Open(exited) // blocks until the script opens it to write
		if err != nil {
			status <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		status <- string(b)
	}()
	wait = func() string {
		select {
		case s := <-status:
			return s
		case <-time.After(time.Minute):
			// Release the reader, which waits for a writer to open the FIFO.
			if f, err := os.OpenFile(exited, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			<-status
			t.Fatal("acpcheck agent did not end within a minute of its client's start")
			return ""
		}
	}
	t.Cleanup(func() {
		select {
		case <-status:
		default:
			if f, err := os.OpenFile(exited, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
	})
	return path, wait
}
