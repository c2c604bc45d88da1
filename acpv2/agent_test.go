package acpv2

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/wiretest"
)

// Agent's default initialize answers version 2 with Info, which v2
// requires, and its default session/new a new ID.
func TestAgentDefaults(t *testing.T) {
	ctx := wiretest.Context(t)
	a := Agent{Info: Implementation{Name: "hello", Version: "1.0"}}
	conn := wiretest.NewWire(t, wiretest.Side{Handler: a.Router()}, wiretest.Side{}).B
	init, err := ToAgent.Initialize.Call(ctx, conn, InitializeRequest{ProtocolVersion: 2, Info: Implementation{Name: "client", Version: "1"}})
	require.NoError(t, err)
	assert.Equal(t, ProtocolVersion(2), Version)
	assert.Equal(t, InitializeResponse{ProtocolVersion: Version, Info: a.Info}, init)
	session, err := ToAgent.SessionNew.Call(ctx, conn, NewSessionRequest{Cwd: "/"})
	require.NoError(t, err)
	assert.Equal(t, SessionID("sess_1"), session.SessionID)
}
