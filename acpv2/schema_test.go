package acpv2

import (
	"testing"

	"github.com/acpkit/acprpc/internal/interoptest"
)

// TestSchemaRoundTrip checks every generated type against the TypeScript
// SDK's validators: samples of each definition, stable and unstable, decode
// into the Go type and encode back to what the SDK reads the same way.
func TestSchemaRoundTrip(t *testing.T) {
	interoptest.SchemaRoundTrip(t, 2, "../interop", schemaTypes)
}
