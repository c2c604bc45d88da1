package acprpc

import (
	"fmt"
	"sync/atomic"
)

// repeatedWarning bounds a warning that the peer can cause as often as it
// likes (a line that is not JSON, an answer saying it could not read a
// message): it is logged the first maxRepeatedWarnings times on a
// connection, the last of them saying that the next ones are not, so that
// a peer flooding them cannot flood the log.
type repeatedWarning struct{ n atomic.Int64 }

// peerWarnings are the warnings a peer can cause as often as it likes, each
// logged at most maxRepeatedWarnings times per connection.
type peerWarnings struct {
	notJSON          repeatedWarning // a line that is not JSON
	unreadable       repeatedWarning // an ID-less answer saying the peer could not read a message
	invalid          repeatedWarning // a message that is JSON but not JSON-RPC
	invalidResponse  repeatedWarning // an answer that breaks JSON-RPC
	malformedCancel  repeatedWarning // a cancel whose params name no request
	beforeInitialize repeatedWarning // a session method before initialize
}

// maxRepeatedWarnings is how many times a repeatedWarning is logged per
// connection: enough to see a pattern, few enough for any flood.
const maxRepeatedWarnings = 8

// due reports whether the warning is logged this time, and returns msg as
// it is logged: the last time with the words that say the next ones are not.
func (r *repeatedWarning) due(msg string) (string, bool) {
	switch n := r.n.Add(1); {
	case n < maxRepeatedWarnings:
		return msg, true
	case n == maxRepeatedWarnings:
		return fmt.Sprintf("%s. Logged the first %d times: the next ones on this connection are not logged", msg, maxRepeatedWarnings), true
	}
	return "", false
}

// peerTextShown is how many bytes of the peer's own text (an error's
// message) a warning quotes: enough to recognise it, bounded whatever the
// peer sends.
const peerTextShown = 300
