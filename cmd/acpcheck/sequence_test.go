package main

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// An agent that answers a request before the proxy's write of it has
// returned: the record and the monitor see the request first, as the
// agent did, and the answer after it.
func TestRecordKeepsCauseBeforeEffect(t *testing.T) {
	var got []string
	q := newSequencer(func(seq int, _ float64, dir string, line []byte, _ int) {
		got = append(got, fmt.Sprintf("%d %s %s", seq, dir, line))
	})
	fromAgentSide := &splitter{dir: fromAgent, q: q}
	agent := writerFunc(func(b []byte) (int, error) {
		require.NoError(t, forward(io.Discard, strings.NewReader(`{"id":1,"result":{}}`+"\n"), fromAgentSide, nil, nil))
		return len(b), nil
	})
	require.NoError(t, forward(agent, strings.NewReader(`{"id":1,"method":"x"}`+"\n"), &splitter{dir: toAgent, q: q}, nil, nil))
	assert.Equal(t, []string{`1 to_agent {"id":1,"method":"x"}`, `2 from_agent {"id":1,"result":{}}`}, got)
}
