package fdio

import (
	"syscall"
	"unsafe"
)

const canCountUnread = true

// unreadBytes is the count of bytes waiting in fd's input (FIONREAD, spelt
// TIOCINQ here), or 0 if it cannot be told.
func unreadBytes(fd uintptr) int {
	var n int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0
	}
	return int(n)
}
