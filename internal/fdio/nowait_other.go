//go:build !unix

package fdio

import "io"

// NoWaitWriter would write without waiting for the reader; only Unix
// descriptors offer that here.
type NoWaitWriter struct{}

// NewNoWaitWriter returns nil: writes go through the writer goroutine.
func NewNoWaitWriter(io.Writer) *NoWaitWriter { return nil }

// TryWrite writes nothing; NewNoWaitWriter never returns a writer to call it on.
func (*NoWaitWriter) TryWrite([]byte) (int, error) { return 0, nil }
