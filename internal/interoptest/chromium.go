package interoptest

import (
	"os"
	"os/exec"
	"testing"
)

// RequireChromium returns the Chromium binary the browser tests drive:
// ACPRPC_CHROMIUM if it is set, else /usr/bin/chromium (Debian's package).
// When there is none the test fails and says how to install it (.ci/run
// does it itself): a browser test never skips in silence. Only
// ACPRPC_SKIP_BROWSER=1, set on purpose, turns the failure into a skip,
// and never under CI.
func RequireChromium(t testing.TB) string {
	t.Helper()
	path := os.Getenv("ACPRPC_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		missing(t, "ACPRPC_SKIP_BROWSER", "the browser test",
			"the browser tests need Chromium ("+err.Error()+"); install it with `apt-get install -y chromium` "+
				"(as .ci/run does), or name it with ACPRPC_CHROMIUM")
	}
	return path
}
