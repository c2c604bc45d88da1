package acprpc

import (
	"fmt"

	"github.com/acpkit/acprpc/internal/wire"
)

// MessageTooLargeError is what a Transport's Recv returns for a message over
// its size limit, which it dropped without holding it in memory. The Conn
// answers it -32600 with the message's ID, or fails our call that it
// answers, and reads the next message.
//
// A transport fills it by passing each part of the message through Write as
// it reads and drops it: Write finds the top-level "id" and whether the
// message is an answer wherever they are in the message (JSON does not
// order members), keeping only the ID and the message's first bytes. A
// transport that keeps only the message's first bytes can set Prefix
// instead, and the Conn looks for the ID there.
type MessageTooLargeError struct {
	Size  int // the message's size in bytes, as far as it was read
	Limit int // the limit it broke

	// ID is the message's top-level "id", when it has one this library can
	// carry (a string or an integer of 64 bits).
	ID ID
	// IsResponse says whether the message is an answer: a top-level
	// "result" or "error" member, and no method.
	IsResponse bool
	// Prefix is the message's first bytes, at most 4 KiB of them, which
	// Write keeps as it goes (the Received hook shows them). A transport
	// that does not use Write can set them itself: when nothing was passed
	// through Write, the Conn reads the ID from here, as far as it goes.
	Prefix []byte

	scan wire.Envelope
}

// prefixSize is how many of an over-long message's first bytes Write keeps
// in Prefix.
const prefixSize = 4 << 10

// Error says how large the message was and what the limit is.
func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("message of %d bytes exceeds the limit of %d", e.Size, e.Limit)
}

// Write scans the next part of the dropped message, adds its length to Size,
// and keeps what it needs of the message's first bytes. It keeps none of p
// itself, never fails, and costs one pass over p.
func (e *MessageTooLargeError) Write(p []byte) (int, error) {
	if len(e.Prefix) < prefixSize {
		e.Prefix = append(e.Prefix, p[:min(len(p), prefixSize-len(e.Prefix))]...)
	}
	e.Size += len(p)
	e.scan.Feed(p)
	if id := e.scan.ID(); string(id) != e.ID.raw {
		e.ID = ID{raw: string(id)}
	}
	e.IsResponse = e.scan.IsResponse()
	return len(p), nil
}

// envelope is what the Conn needs of a dropped message: its ID and whether
// it answers one of our calls.
func (e *MessageTooLargeError) envelope() (id []byte, isResponse bool) {
	id, isResponse = []byte(e.ID.raw), e.IsResponse
	if e.ID.IsZero() && !isResponse && !e.scan.Fed() && len(e.Prefix) > 0 {
		id, isResponse = wire.PeekID(e.Prefix)
	}
	if !wire.ValidID(id) {
		id = nil
	}
	return id, isResponse
}

// newMessageTooLarge is the error for a message over limit that is at hand whole:
// one a transport handed over without a limit of its own, or a line that
// fit in the Stream's read buffer.
func newMessageTooLarge(msg []byte, limit int) *MessageTooLargeError {
	e := &MessageTooLargeError{Limit: limit}
	_, _ = e.Write(msg)
	return e
}
