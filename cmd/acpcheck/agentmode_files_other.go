//go:build !unix

package main

import "os"

// makeBlocking writes a plain file at path: without named pipes the read
// is answered at once. It returns nil: there is no reader to let go.
func makeBlocking(path string) func() {
	_ = os.WriteFile(path, []byte(releasedText), 0o600)
	return nil
}
