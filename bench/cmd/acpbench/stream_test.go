package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acprpc-unsent<N> serves acprpc's stream agent with a bound of N unsent
// notifications, over stdio, and acprpc-nowait one whose notifications
// never wait for the client's unread input; a name with no positive N is refused, with
// the names known.
func TestStreamPeersUnsentBound(t *testing.T) {
	cfg := &config{server: "server"}
	peers, err := streamPeers(cfg, []string{"acprpc", "acprpc-unsent16", "acprpc-unsent8", "acprpc-nowait"})
	require.NoError(t, err)
	assert.Equal(t, []streamPeer{
		{"acprpc", "server -peer acprpc -stream", stdio},
		{"acprpc-unsent16", "server -peer acprpc -stream -max-unsent 16", stdio},
		{"acprpc-unsent8", "server -peer acprpc -stream -max-unsent 8", stdio},
		{"acprpc-nowait", "server -peer acprpc -stream -unread-input-wait -1ns", stdio},
	}, peers)
	for _, bad := range []string{"acprpc-unsent", "acprpc-unsent0", "acprpc-unsent-4", "acprpc-unsentx"} {
		_, err := streamPeers(cfg, []string{bad})
		assert.ErrorContains(t, err, "acprpc-unsent<N>", bad)
	}
}
