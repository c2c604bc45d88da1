package fdio

import (
	"io"
	"syscall"
)

// InputProbe tells whether a descriptor's reader has bytes waiting that no
// read has taken yet: the peer wrote, and the reading goroutine has not got
// round to it.
type InputProbe struct {
	rc    syscall.RawConn
	n     int
	query func(fd uintptr) // p.count, made once so that a probe allocates nothing
}

// NewInputProbe returns a probe of r, or nil when r has no descriptor or the
// system offers no way to count its unread bytes.
func NewInputProbe(r io.Reader) *InputProbe {
	rc := rawConn(r)
	if rc == nil || !canCountUnread {
		return nil
	}
	p := &InputProbe{rc: rc}
	p.query = p.count
	return p
}

func (p *InputProbe) count(fd uintptr) { p.n = unreadBytes(fd) }

// Waiting reports whether bytes wait to be read. A probe that fails says
// no: it only ever hastens a read, never stands in for one.
func (p *InputProbe) Waiting() bool {
	p.n = 0
	if p.rc.Control(p.query) != nil {
		return false
	}
	return p.n > 0
}
