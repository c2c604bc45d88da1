package acprpc

// signal is a channel made only once someone waits on it, and closed and
// forgotten when what they wait for happens, so that a table with no one
// waiting allocates nothing. The lock of the struct that holds it protects
// it: wait and fire are called with that lock held.
type signal struct{ ch chan struct{} }

// wait returns a channel closed by the next fire.
func (s *signal) wait() <-chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// fire wakes everyone waiting, if anyone is.
func (s *signal) fire() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// closedChan is a channel that is always ready.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
