package wiretest

import "testing"

// Step is one move of a scripted conversation: its name, for failure
// messages, and the move itself. Cut, if set, makes the move only in part,
// as a peer that dies in the middle of it would.
type Step struct {
	Name string
	Do   func(t *testing.T)
	Cut  func(t *testing.T)
}

// Script is a conversation, step by step.
type Script []Step

// Play makes the first n moves, in order.
func (s Script) Play(t *testing.T, n int) {
	t.Helper()
	for i, st := range s[:n] {
		s.move(t, i, st.Name, st.Do)
	}
}

// PlayCut makes the first n-1 moves, then the n-th only in part; a step
// without Cut is skipped.
func (s Script) PlayCut(t *testing.T, n int) {
	t.Helper()
	s.Play(t, n-1)
	if st := s[n-1]; st.Cut != nil {
		s.move(t, n-1, st.Name+" (cut)", st.Cut)
	}
}

// move runs one move and, if it fails the test, says which.
func (s Script) move(t *testing.T, i int, name string, f func(t *testing.T)) {
	t.Helper()
	failed := t.Failed()
	defer func() {
		if !failed && t.Failed() {
			t.Logf("wiretest: failed at step %d of %d, %s", i+1, len(s), name)
		}
	}()
	f(t)
}
