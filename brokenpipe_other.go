//go:build !unix

package acprpc

// failWritesToClosedStdout does nothing where no signal kills a process
// that writes to a closed stdout.
func failWritesToClosedStdout() (restore func()) { return func() {} }
