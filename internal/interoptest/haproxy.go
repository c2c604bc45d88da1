package interoptest

import (
	"os/exec"
	"testing"
)

// RequireHAProxy returns the haproxy binary on PATH, for the tests that put
// replicas behind a real load balancer. When there is none the test fails
// and says how to install it (.ci/run does it itself, from Debian's
// packages): like the interop tests, it never skips in silence. Only
// ACPRPC_SKIP_HAPROXY=1, set on purpose, turns the failure into a skip,
// and never under CI.
func RequireHAProxy(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("haproxy")
	if err != nil {
		missing(t, "ACPRPC_SKIP_HAPROXY", "the load-balancer test",
			"the load-balancer tests need HAProxy on PATH ("+err.Error()+"); install it with "+
				"`apt-get install -y haproxy` (as .ci/run does)")
	}
	return p
}
