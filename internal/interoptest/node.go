package interoptest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// NodePackages are the npm packages the TypeScript interop scripts need,
// with the version package.json pins where it matters ("" for any).
var NodePackages = map[string]string{"@agentclientprotocol/sdk": "2.4.0", "ws": "", "tsx": ""}

// nodeChecks caches, per directory, what RequireNodeModules found.
var nodeChecks sync.Map // dir -> *nodeCheck

type nodeCheck struct {
	once sync.Once
	path string
	err  error
}

// RequireNode returns the node binary, once Node.js 20+ and NodePackages
// are known to be installed under dir/node_modules; see RequireNodeModules.
func RequireNode(t testing.TB, dir string) string {
	t.Helper()
	return RequireNodeModules(t, dir, NodePackages)
}

// RequireNodeModules returns the node binary, once Node.js 20+ and pkgs
// (name to pinned version, "" for any) are known to be installed under
// dir/node_modules. When they are not, the test fails and says how to
// install them (`bash scripts/test.sh` does it itself): the interop tests
// never skip in silence. Only ACPRPC_SKIP_INTEROP=1, set on purpose, turns
// the failure into a skip, and never under CI.
func RequireNodeModules(t testing.TB, dir string, pkgs map[string]string) string {
	t.Helper()
	v, _ := nodeChecks.LoadOrStore(dir, &nodeCheck{})
	c := v.(*nodeCheck)
	c.once.Do(func() { c.path, c.err = findNode(dir, pkgs) })
	if c.err == nil {
		return c.path
	}
	missing(t, "ACPRPC_SKIP_INTEROP", "the interop test",
		fmt.Sprintf("the interop tests need Node.js 20+ and the packages pinned in %s: %v; run `bash scripts/test.sh`, "+
			"which installs them (npm ci there)", dir, c.err))
	return ""
}

// missing fails a test that lacks what it needs, saying why and how to get
// it: a test never skips in silence. Only skipEnv=1, set on purpose, turns
// the failure into a skip, and never under CI.
func missing(t testing.TB, skipEnv, test, why string) {
	t.Helper()
	if os.Getenv(skipEnv) == "1" && os.Getenv("CI") != "true" {
		t.Skipf("%s=1: skipping %s: %s", skipEnv, test, why)
	}
	t.Fatalf("%s, or set %s=1 to skip them knowingly", why, skipEnv)
}

func findNode(dir string, pkgs map[string]string) (string, error) {
	p, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("no Node.js on PATH: %w", err)
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", p, err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err != nil || n < 20 {
		return "", fmt.Errorf("found Node.js %s, and 20 or newer is needed", v)
	}
	for pkg, want := range pkgs {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
		if err != nil {
			return "", fmt.Errorf("node_modules/%s is missing: %w", pkg, err)
		}
		var meta struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(b, &meta); err != nil || (want != "" && meta.Version != want) {
			return "", fmt.Errorf("node_modules holds %s %q, not the pinned %s", pkg, meta.Version, want)
		}
	}
	return p, nil
}
