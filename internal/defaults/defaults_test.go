package defaults_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acpkit/acprpc/internal/defaults"
)

func TestPositive(t *testing.T) {
	assert.Equal(t, 7, defaults.Positive(7, 100), "a positive limit is kept")
	assert.Equal(t, 100, defaults.Positive(0, 100), "zero means the default")
	assert.Equal(t, 100, defaults.Positive(-1, 100), "a negative limit means the default")
}
