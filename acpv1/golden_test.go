package acpv1

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/interoptest"
)

// TestGoldenWire decodes every message of the golden wire logs (a
// TypeScript SDK client and the Go example agent, recorded by the interop
// scenarios) into the generated types and encodes it back to the same JSON.
func TestGoldenWire(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "wire", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	n := interoptest.GoldenRoundTrip(t, 1, "../interop", files, func(method, member string) any {
		types, ok := methodTypes[method]
		if !ok {
			return nil
		}
		newValue := map[string]func() any{"params": types.Request, "result": types.Result, "notification": types.Notification}[member]
		if newValue == nil {
			return nil
		}
		return newValue()
	})
	require.Greater(t, n, 20, "the golden files hold the messages of whole turns")
}
