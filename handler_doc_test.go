package acprpc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A plain function given where a Handler is wanted fails to compile with
// "missing method Handle", and the docs of Router.Register, Handler and
// HandlerFunc quote those words and name HandlerFunc, so a search for the
// compiler's words finds the way out.
func TestPlainFuncAsHandlerIsDocumented(t *testing.T) {
	const src = `package p
type Context interface{}
type Request struct{}
type Handler interface{ Handle(ctx Context, req *Request) (any, error) }
func Register(method string, h Handler) {}
func f() { Register("m", func(ctx Context, req *Request) (any, error) { return nil, nil }) }
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	require.NoError(t, err)
	_, err = (&types.Config{}).Check("p", fset, []*ast.File{file}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not implement Handler (missing method Handle)", "the compiler's words")

	docs := map[string]string{}
	for _, name := range []string{"router.go", "handler.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				docs[d.Name.Name] = d.Doc.Text()
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						docs[ts.Name.Name] = d.Doc.Text()
					}
				}
			}
		}
	}
	for _, name := range []string{"Register", "Handler", "HandlerFunc"} {
		doc := strings.Join(strings.Fields(docs[name]), " ")
		assert.Contains(t, doc, `"missing method Handle"`, "%s's doc quotes the compiler", name)
		assert.Contains(t, doc, "HandlerFunc(f)", "%s's doc names the way out", name)
	}
}
