package remote

import (
	"errors"
	"io"
	"net/http"
	"sync"
)

// errPostBudget is a POST refused because its connection has as many
// POSTs, or as many of their bytes, waiting for its Conn as it may hold.
var errPostBudget = errors.New("remote: too many messages waiting for the connection to take them")

// postRetryAfter is the Retry-After of a POST refused over the budget, in
// seconds: by then the Conn has usually taken what waited.
const postRetryAfter = "1"

// postBudget bounds the POSTs of one Streamable HTTP connection that hold
// a message the Conn has not taken yet: while a POST's body is read and
// while it waits for the Conn, which takes one message at a time and stops
// taking them when it is busy. A POST over the count, or whose body would
// take the bytes over their bound, is refused with 429 at once.
type postBudget struct {
	maxPosts, maxBytes int

	mu           sync.Mutex
	posts, bytes int
}

// enter counts one more POST, unless there are maxPosts already.
func (b *postBudget) enter() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.posts >= b.maxPosts {
		return false
	}
	b.posts++
	return true
}

// charge counts n more bytes of a POST's body, unless that would take the
// total over maxBytes.
func (b *postBudget) charge(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bytes+n > b.maxBytes {
		return false
	}
	b.bytes += n
	return true
}

// fit raises maxBytes to n, so that one message of the connection's limit
// always fits.
func (b *postBudget) fit(n int) {
	b.mu.Lock()
	b.maxBytes = max(b.maxBytes, n)
	b.mu.Unlock()
}

// leave releases a POST that entered, with the bytes it was charged.
func (b *postBudget) leave(charged int) {
	b.mu.Lock()
	b.posts--
	b.bytes -= charged
	b.mu.Unlock()
}

// chargedBody is a POST's body whose bytes are charged to its
// connection's budget as they are read; reading fails with errPostBudget
// once the budget is spent.
type chargedBody struct {
	io.ReadCloser
	budget  *postBudget
	charged int
}

func (c *chargedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 {
		if !c.budget.charge(n) {
			return 0, errPostBudget
		}
		c.charged += n
	}
	return n, err
}

// errOverBudget refuses a POST over its connection's budget.
var errOverBudget = &refusal{http.StatusTooManyRequests, "Too Many Requests: " + errPostBudget.Error()[len("remote: "):]}

// refuseOverBudget answers a POST over its connection's budget.
func (s *Server) refuseOverBudget(w http.ResponseWriter, r *http.Request) {
	s.refusals.refused(r, errOverBudget)
	w.Header().Set("Retry-After", postRetryAfter)
	refuseUnread(w, errOverBudget)
}
