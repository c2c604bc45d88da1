package wiretest

// changes wakes those waiting for a value that its owner guards with a
// mutex: next, called under the owner's lock, returns a channel that the
// next wake, also under the lock, closes. The channel is made only when
// someone waits, so a record written millions of times costs nothing more.
type changes struct{ ch chan struct{} }

func (c *changes) next() <-chan struct{} {
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

func (c *changes) wake() {
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}
