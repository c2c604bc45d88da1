package wiretest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestScriptPlays(t *testing.T) {
	var moves []string
	step := func(name string, cut bool) Step {
		s := Step{Name: name, Do: func(*testing.T) { moves = append(moves, name) }}
		if cut {
			s.Cut = func(*testing.T) { moves = append(moves, name+" cut") }
		}
		return s
	}
	script := Script{step("a", true), step("b", false), step("c", true)}
	script.Play(t, 2)
	assert.Equal(t, []string{"a", "b"}, moves)
	moves = nil
	script.PlayCut(t, 3)
	assert.Equal(t, []string{"a", "b", "c cut"}, moves)
	moves = nil
	script.PlayCut(t, 2)
	assert.Equal(t, []string{"a"}, moves, "b cannot be cut")
	moves = nil
	script.Play(t, 0)
	assert.Empty(t, moves)
}
