//go:build unix

package main

import (
	"os"
	"syscall"
)

// makeBlocking makes path a named pipe that acpcheck holds open for
// writing, so that a reader's open returns and its read waits. The
// function it returns lets the readers go: a plain file takes the pipe's
// place first, for readers still to come, then the pipe gives the readers
// releasedText and its end. It returns nil, and leaves a plain file, where
// no pipe can be made.
func makeBlocking(path string) func() {
	plain := func() func() {
		_ = os.WriteFile(path, []byte(releasedText), 0o600)
		return nil
	}
	if syscall.Mkfifo(path, 0o600) != nil {
		return plain()
	}
	// O_RDWR: opening a named pipe so never waits for the other end.
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		_ = os.Remove(path)
		return plain()
	}
	return func() {
		tmp := path + ".done"
		if os.WriteFile(tmp, []byte(releasedText), 0o600) == nil {
			_ = os.Rename(tmp, path)
		}
		_, _ = w.WriteString(releasedText)
		_ = w.Close()
	}
}
