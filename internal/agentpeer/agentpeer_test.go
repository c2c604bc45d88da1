package agentpeer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	_ "github.com/acpkit/acprpc" // sets Mark
	"github.com/acpkit/acprpc/internal/agentpeer"
)

// Linking acprpc sets Mark, which agentproc calls on every Conn it makes.
func TestMarkIsSetByAcprpc(t *testing.T) {
	assert.NotNil(t, agentpeer.Mark)
}
