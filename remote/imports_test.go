package remote

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportsOnlyTheRootsPublicAPI reads the imports of every file of the
// package but its tests: none is an internal package of the root module.
// Go lets this module import them only because the two share a path
// prefix; released apart, a version of remote would then build against
// whatever the root's internal packages are at the root's version a user
// has, which no compatibility promise covers. The tests may use the root's
// test kits: they are built only here, beside the root of the same commit.
func TestImportsOnlyTheRootsPublicAPI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			assert.False(t, strings.HasPrefix(path, "github.com/acpkit/acprpc/internal/"), "%s imports %s", name, path)
		}
	}
}
