package store_test

import (
	"fmt"
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

// engineFiles are the two implementations of the store's engine: the only files
// allowed to depend on which database the store runs on.
var engineFiles = map[string]bool{"postgres.go": true, "sqlite.go": true}

// dialectWords name the database in code: the Dialect constants and accessors.
var dialectWords = map[string]bool{"Postgres": true, "SQLite": true, "Dialect": true, "dialect": true}

// dialectBranches returns "file:line" of each branch on the database in src: a
// comparison (== or !=) or a switch whose operands name the dialect, or a case
// listing a dialect constant.
func dialectBranches(fset *token.FileSet, f *ast.File) []string {
	mentions := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident:
				found = found || dialectWords[x.Name]
			case *ast.SelectorExpr:
				found = found || dialectWords[x.Sel.Name]
			}
			return !found
		})
		return found
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		var hit bool
		switch x := n.(type) {
		case *ast.BinaryExpr:
			hit = (x.Op == token.EQL || x.Op == token.NEQ) && (mentions(x.X) || mentions(x.Y))
		case *ast.SwitchStmt:
			hit = x.Tag != nil && mentions(x.Tag)
		case *ast.CaseClause:
			for _, e := range x.List {
				hit = hit || mentions(e)
			}
		}
		if hit {
			out = append(out, fset.Position(n.Pos()).String())
		}
		return true
	})
	return out
}

// TestNoDialectBranchOutsideTheEngines holds the store seam: what differs between
// PostgreSQL and SQLite is written in postgres.go and sqlite.go (the engine), and
// no other file of the package, nor any package outside it, branches on which
// database it is. Configuration (which refuses SQLite in production) and the URL
// grammar are the exceptions by nature; tests and the store's test support
// (storetest) may look.
func TestNoDialectBranchOutsideTheEngines(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var found []string
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || engineFiles[name] {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		found = append(found, dialectBranches(fset, f)...)
	}
	require.Empty(t, found, "branches on the database outside postgres.go and sqlite.go")

	// Elsewhere in the module: no branch on store's or dburl's dialects.
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, "partnerd/...").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		dir := fields[0]
		rel := filepath.ToSlash(dir)
		if strings.Contains(rel+"/", "/internal/store/") || strings.HasSuffix(rel, "/internal/kit/dburl") ||
			strings.HasSuffix(rel, "/internal/config") || strings.Contains(rel, "/gen/") {
			continue
		}
		for _, name := range fields[1:] {
			src, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			if !strings.Contains(string(src), "Postgres") && !strings.Contains(string(src), "SQLite") && !strings.Contains(string(src), "Dialect()") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), src, 0)
			require.NoError(t, err)
			for _, b := range dialectBranches(fset, f) {
				if strings.Contains(b, "/internal/chain/") { // chain/rpc's Dialect is a node's JSON-RPC dialect
					continue
				}
				found = append(found, b)
			}
		}
	}
	require.Empty(t, found, "branches on the database outside the store")
}

// TestTheSeamCheckFindsABranch proves the check above can fail.
func TestTheSeamCheckFindsABranch(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", `package store
func f(s *Store) {
	if s.eng.dialect() == Postgres {}
	switch s.Dialect() { case SQLite: }
	_ = s.Dialect() != "sqlite"
	if s.ready() { }
}`, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"x.go:3:5", "x.go:4:2", "x.go:4:23", "x.go:5:6"}, dialectBranches(fset, f), fmt.Sprint(dialectBranches(fset, f)))
}
