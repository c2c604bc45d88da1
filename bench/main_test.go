package bench

import (
	"io"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	stamps = io.Discard // the stream agents' stamps are for acpbench
	goleak.VerifyTestMain(m)
}
