package agentproc_test

import "syscall"

// holdMemory maps n bytes the process owns, each page of them in memory
// (not through the Go heap, which the race detector makes slow to fill).
func holdMemory(n int) error {
	_, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	return err
}
