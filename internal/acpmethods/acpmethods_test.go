package acpmethods

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/acpv2"
)

func TestNew(t *testing.T) {
	assert.IsType(t, new(acpv1.PromptRequest), New(1, "session/prompt", "params"))
	assert.IsType(t, new(acpv2.UpdateSessionNotification), New(2, "session/update", "notification"))
	assert.IsType(t, new(acpv1.Error), New(1, "", "error"), "an error answer's error, even to no known request")
	assert.IsType(t, new(acpv2.Error), New(2, "session/prompt", "error"))
	assert.Nil(t, New(1, "session/prompt", "notification"), "session/prompt is no notification")
	assert.Nil(t, New(2, "terminal/create", "params"), "v2 has no terminal/create")
	assert.Nil(t, New(3, "initialize", "params"))
}
