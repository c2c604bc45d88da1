package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The same cascade over each remote transport, with the agent serving on a
// loopback port.
func TestCascadeOverRemoteTransports(t *testing.T) {
	for _, tr := range []string{"ws", "http"} {
		for _, cancel := range []string{"session", "request"} {
			t.Run(tr+" cancel="+cancel, func(t *testing.T) {
				out := cascade(t, "-agent", agentBin, "-delay", "20ms", "-transport", tr, "-cancel="+cancel)
				assert.Contains(t, out, "over "+transportNames[tr]+":")
				line(t, out, `^ +[0-9.]+ms  A→C      ✂ \$/cancel_request  #a[12] \(terminal/create\)$`)
				line(t, out, `^ +[0-9.]+ms  A→C  ↩ #c3 session/prompt → \{"stopReason":"cancelled"\}$`)
				line(t, out, `^  ✓ every request was answered exactly once: 3 from the client, 2 from the agent$`)
				line(t, out, `^stopReason: cancelled$`)
			})
		}
	}
	t.Run("ws protocol 2", func(t *testing.T) {
		out := cascade(t, "-agent", agentBin, "-delay", "20ms", "-transport", "ws", "-protocol", "2")
		line(t, out, `^stopReason: cancelled$`)
	})
}

func TestCascadeRefusesAnUnknownTransport(t *testing.T) {
	assert.Equal(t, 2, run(t.Context(), []string{"-transport", "carrier-pigeon"}, &discard{}, &discard{}))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
