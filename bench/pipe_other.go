//go:build !linux

package bench

import "os"

// stdioPipe is os.Pipe where blocking descriptors cannot be made here.
func stdioPipe(bool) (r, w *os.File, err error) { return os.Pipe() }
