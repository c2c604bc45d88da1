package interop

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acpkit/acprpc/internal/acpmethods"
	"github.com/acpkit/acprpc/internal/interoptest"
)

// The generated types on every message of the scenarios: each TypeScript
// scenario's wire log goes through acpv1 or acpv2 (decoded, encoded, and
// read by the SDK's validators the same way before and after), error
// answers included, so the types are proved on what the SDK and the Go
// examples really send. internal/acpmethods names the types.

// checkTypes round-trips every message of a scenario's wire log through
// the generated types of ACP version v.
func checkTypes(t *testing.T, v int, name string, wire wireLog) {
	t.Helper()
	if len(wire) == 0 {
		return
	}
	msgs := make([]interoptest.GoldenMessage, len(wire))
	for i, e := range wire {
		msgs[i] = interoptest.GoldenMessage{Dir: e.Dir, Msg: e.Msg}
	}
	validator := interoptest.NewSchemaValidator(t, interopDir)
	n := interoptest.TypesRoundTrip(t, validator, v, name, msgs, func(method, member string) any {
		return acpmethods.New(v, method, member)
	})
	assert.Positive(t, n, "%s: no message went through the generated types", name)
}
