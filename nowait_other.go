//go:build !unix

package acprpc

import "io"

// noWaitWriter would write without waiting for the reader; only Unix
// descriptors offer that here.
type noWaitWriter struct{}

// newNoWaitWriter returns nil: writes go through the writer goroutine.
func newNoWaitWriter(io.Writer) *noWaitWriter { return nil }

func (*noWaitWriter) tryWrite([]byte) (int, error) { return 0, nil }
