package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingWriter counts what is written to it, keeping nothing.
type countingWriter struct{ n int }

func (c *countingWriter) Write(b []byte) (int, error) {
	c.n += len(b)
	return len(b), nil
}

// A 100 MiB line goes through the proxy whole, while the proxy keeps only
// its first MiB, which the record marks with the line's size, and reports
// it.
func TestProxyKeepsLongLinesCut(t *testing.T) {
	recPath := filepath.Join(t.TempDir(), "wire.jsonl")
	rec, err := os.Create(recPath)
	require.NoError(t, err)
	out := &countingWriter{}
	v := &violations{}
	inR, inW := io.Pipe()
	defer inW.Close()
	_, err = runProxy(context.Background(), proxyOptions{Argv: []string{os.Args[0]}, Env: []string{agentEnv + "=" + agentHugeLine}, Record: rec}, inR, out, io.Discard, v.add)
	require.NoError(t, err)
	require.NoError(t, rec.Close())
	assert.Equal(t, hugeLine+len(cutLine)+1, out.n, "every byte forwarded")
	read, err := readRecordingFile(recPath)
	require.NoError(t, err)
	require.Len(t, read.lines, 2)
	assert.Equal(t, hugeLine-1, read.lines[0].Size)
	assert.Len(t, read.lines[0].Raw, maxKeptLine)
	assert.Equal(t, cutLine, read.lines[1].Raw)
	// The long line is forwarded whole and judged by nothing but its size;
	// the agent's last line, cut as it exited, is not JSON.
	assert.Equal(t, []string{ruleLineSize.ID, ruleFraming.ID}, v.rules())
}

// run drops an agent's 100 MiB line at the connection's limit, keeping its
// first bytes marked with its size, and goes on.
func TestRunKeepsLongLinesCut(t *testing.T) {
	rep, err := runChecks(context.Background(), testOptions(t, faultHugeUpdate))
	require.NoError(t, err)
	var cut []Line
	for _, l := range rep.Wire {
		if l.Size > 0 {
			cut = append(cut, l)
		}
	}
	require.NotEmpty(t, cut)
	assert.Equal(t, hugeLine-1, cut[0].Size)
	assert.Less(t, len(cut[0].Raw), 1<<20)
	var text strings.Builder
	rep.WriteText(&text)
	assert.Contains(t, text.String(), "more than acpcheck keeps")
}
