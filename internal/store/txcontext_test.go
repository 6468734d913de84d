package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// txInContext returns "function@file:line" of each place in f that puts a unit of
// work into a context or looks one up there: a context.WithValue whose key or
// value names a transaction (an identifier or type with "tx" in its name: txKey,
// tx, *Tx, …), or a Value call whose key does.
func txInContext(fset *token.FileSet, f *ast.File) []string {
	namesTx := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident:
				found = found || strings.Contains(strings.ToLower(x.Name), "tx")
			case *ast.SelectorExpr:
				found = found || strings.Contains(strings.ToLower(x.Sel.Name), "tx")
			}
			return !found
		})
		return found
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			hit := false
			switch {
			case sel.Sel.Name == "WithValue" && len(call.Args) == 3:
				hit = namesTx(call.Args[1]) || namesTx(call.Args[2])
			case sel.Sel.Name == "Value" && len(call.Args) == 1:
				hit = namesTx(call.Args[0])
			}
			if hit {
				out = append(out, fn.Name.Name+"@"+fset.Position(call.Pos()).String())
			}
			return true
		})
	}
	return out
}

// TestNoTransactionTravelsInAContext walks every Go file of the module: no context
// value carries a unit of work, anywhere. Every use case hands its unit of work
// on as a parameter (the idempotency layer, the lifecycle engine, quotes, webhook
// endpoints and deliveries, the simulator, the deposit watcher, refund tasks,
// partners, operators, API keys, audit rows, batches and partner users).
func TestNoTransactionTravelsInAContext(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, "partnerd/...").Output()
	require.NoError(t, err)
	fset := token.NewFileSet()
	var found []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		dir := fields[0]
		if strings.Contains(filepath.ToSlash(dir)+"/", "/gen/") {
			continue
		}
		for _, name := range fields[1:] {
			path := filepath.Join(dir, name)
			src, err := os.ReadFile(path)
			require.NoError(t, err)
			if !strings.Contains(string(src), "WithValue(") && !strings.Contains(string(src), ".Value(") {
				continue
			}
			f, err := parser.ParseFile(fset, path, src, 0)
			require.NoError(t, err)
			found = append(found, txInContext(fset, f)...)
		}
	}
	require.Empty(t, found, "a unit of work put in or looked up from a context: hand it on as a parameter")
}

// TestTheContextCheckFindsATransaction proves the check above can fail.
func TestTheContextCheckFindsATransaction(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", `package x
func put(ctx context.Context, tx *Tx) context.Context { return context.WithValue(ctx, txKey{}, tx) }
func get(ctx context.Context) *Tx { t, _ := ctx.Value(txKey{}).(*Tx); return t }
func fine(ctx context.Context) context.Context { _ = ctx.Value(requestIDKey{}); return context.WithValue(ctx, userKey{}, "u") }
`, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"put@x.go:2:64", "get@x.go:3:45"}, txInContext(fset, f))
}
