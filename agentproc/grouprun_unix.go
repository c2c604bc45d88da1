//go:build unix && !linux

package agentproc

import "syscall"

// groupRuns reports whether group pgid has a member left. A zombie counts,
// since no portable call tells it apart: awaitGroupEnd's bound keeps an
// init that is slow to reap orphans from holding Close for long.
func groupRuns(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
