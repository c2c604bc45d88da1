//go:build !linux

package fdio

const canCountUnread = false

// unreadBytes is never called where the input's unread bytes cannot be
// counted.
func unreadBytes(uintptr) int { return 0 }
