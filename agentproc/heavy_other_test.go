//go:build unix && !linux

package agentproc_test

import "errors"

// holdMemory: the test of a heavy child runs on Linux alone.
func holdMemory(int) error { return errors.New("no heavy child here") }
