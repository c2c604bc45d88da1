package acprpc

import (
	"encoding/json"
	"sync"
	"sync/atomic"
)

// lastNotified remembers the method of the last notification written to the
// peer. An answer that names no request carries no method either, and a peer
// answers in the order it reads, so the last notification written before
// such an answer arrives is the likely one it answers.
type lastNotified struct{ method atomic.Pointer[string] }

// wrote notes f as written, if it is a notification. A run of the same
// method (a turn's session/updates) stores nothing new.
func (l *lastNotified) wrote(f *frame) {
	if f.info.kind != KindNotification {
		return
	}
	if p := l.method.Load(); p != nil && *p == f.info.method {
		return
	}
	l.remember(f.info.method)
}

// remember is apart from wrote so that only a change of method allocates.
func (l *lastNotified) remember(method string) { l.method.Store(&method) }

// last returns the method of the last notification written, or "" if none.
func (l *lastNotified) last() string {
	if p := l.method.Load(); p != nil {
		return *p
	}
	return ""
}

// answeredNotes is the methods whose notifications the peer has been logged
// answering, so that each is logged once per connection. It holds at most
// maxAnsweredNotes methods, which are this side's own.
type answeredNotes struct {
	mu     sync.Mutex
	logged map[string]bool
}

// maxAnsweredNotes bounds the methods answeredNotes keeps; past it, answers
// to notifications go unlogged.
const maxAnsweredNotes = 64

// first reports whether method is logged for the first time, and records it.
func (a *answeredNotes) first(method string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.logged[method] || len(a.logged) >= maxAnsweredNotes {
		return false
	}
	if a.logged == nil {
		a.logged = map[string]bool{}
	}
	a.logged[method] = true
	return true
}

// idlessAnswer logs an error answer that names no request, quoting at most
// peerTextShown bytes of it. JSON-RPC sends
// one only for a message the peer could not read (-32700, -32600); with any
// other code the peer read the message and answered it, and a message
// without an ID that is read and answered is a notification, which JSON-RPC
// never answers (codex-acp answers $/cancel_request with -32601 so). Either
// way nothing waits for it. The notification named is the last one written
// when the answer was read (notedAtRead).
func (c *Conn) idlessAnswer(errObj json.RawMessage) {
	var e struct {
		Code int64 `json:"code"`
	}
	_ = json.Unmarshal(errObj, &e)
	shown := firstBytes(errObj, peerTextShown)
	if e.Code == CodeParseError || e.Code == CodeInvalidRequest {
		if msg, ok := c.peerWarned.unreadable.due("acprpc: the peer answered a message it could not read"); ok {
			c.log.Warn(msg, "error", shown)
		}
		return
	}
	method := c.notedAtRead
	if !c.answeredNotes.first(method) {
		return
	}
	if method == "" {
		c.log.Warn("acprpc: the peer sent an error answer that names no request, though no notification was sent to it; "+
			"the answer is ignored. Logged once per connection", "error", shown)
		return
	}
	c.log.Warn("acprpc: the peer answered a notification, which JSON-RPC forbids; the answer is ignored. "+
		"The answer names no method: the one logged is the last notification sent before it came, the likely one. "+
		"Logged once per connection and method",
		"method", method, "error", shown)
}
