package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// notInContext is what never travels in a context value, by the words its key or
// value is named with: a unit of work (txKey, tx, *Tx, …) is handed on as a
// parameter; who acted is one actor.Actor parameter of the use case; a service
// is a dependency of whoever calls it.
var notInContext = []struct {
	what  string
	words []string
}{
	{"a unit of work", []string{"tx"}},
	{"who acted", []string{"actor", "user", "operator", "principal"}},
	{"a service", []string{"service", "svc", "idempotency"}},
}

// transportAuthentication are the places allowed to carry who is calling in a
// request's context: the generated strict handlers are handed nothing but the
// request's context, so each API's authentication middleware leaves its result
// there, and the handler reads it once and hands its use case an actor.Actor.
// Nothing below a handler looks it up. Each must still exist (the check fails
// on a stale entry).
var transportAuthentication = []string{
	"operatorapi.authenticate", // the operator API's key → the operator
	"operatorapi.operatorFrom", // its handlers read it
	"operatorapi.replay",       // an approved proposal runs as its approver (four eyes)
	"httpapi.WithPrincipal",    // the dashboard's in-process calls name their user
	"httpapi.principalFrom",    // the partner API's authentication reads it
}

// inContext returns "package.function@file:line: what" of each place in f that
// puts one of notInContext into a context or looks one up there: a
// context.WithValue whose key or value is named with one of its words (or is a
// variable declared with a type so named), or a Value call whose key is.
func inContext(fset *token.FileSet, f *ast.File) []string {
	var named func(n ast.Node) string
	named = func(n ast.Node) string {
		found := ""
		ast.Inspect(n, func(n ast.Node) bool {
			var name string
			switch x := n.(type) {
			case *ast.Ident:
				name = x.Name
				// A variable's declared type counts as its name does (a
				// parameter a of type actor.Actor, s of *idempotency.Service).
				if x.Obj != nil {
					switch d := x.Obj.Decl.(type) {
					case *ast.Field:
						found = named(d.Type)
					case *ast.ValueSpec:
						if d.Type != nil {
							found = named(d.Type)
						}
					}
				}
			case *ast.SelectorExpr:
				name = x.Sel.Name
			}
			for _, c := range notInContext {
				for _, w := range c.words {
					if found == "" && strings.Contains(strings.ToLower(name), w) {
						found = c.what
					}
				}
			}
			return found == ""
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
			what := ""
			switch {
			case sel.Sel.Name == "WithValue" && len(call.Args) == 3:
				if what = named(call.Args[1]); what == "" {
					what = named(call.Args[2])
				}
			case sel.Sel.Name == "Value" && len(call.Args) == 1:
				what = named(call.Args[0])
			}
			if what != "" {
				out = append(out, f.Name.Name+"."+fn.Name.Name+"@"+fset.Position(call.Pos()).String()+": "+what)
			}
			return true
		})
	}
	return out
}

// notAllowed returns the places of found outside transportAuthentication, and
// the entries of transportAuthentication no place matched.
func notAllowed(found []string) (places, stale []string) {
	used := map[string]bool{}
	for _, p := range found {
		fn, _, _ := strings.Cut(p, "@")
		if slices.Contains(transportAuthentication, fn) {
			used[fn] = true
			continue
		}
		places = append(places, p)
	}
	for _, fn := range transportAuthentication {
		if !used[fn] {
			stale = append(stale, fn)
		}
	}
	return places, stale
}

// TestNoTransactionTravelsInAContext walks every Go file of the module: no context
// value carries a unit of work, who acted or a service, anywhere. Every use case
// is handed its unit of work (the idempotency layer, the lifecycle engine,
// quotes, webhook endpoints and deliveries, the simulator, the deposit watcher,
// refund tasks, partners, operators, API keys, audit rows, batches and partner
// users) and its actor as parameters; only the APIs' authentication leaves the
// caller in the request's context for the handler (transportAuthentication).
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
			found = append(found, inContext(fset, f)...)
		}
	}
	places, stale := notAllowed(found)
	require.Empty(t, places, "put in or looked up from a context: hand it on as a parameter")
	require.Empty(t, stale, "allowed places that no longer exist: drop them from transportAuthentication")
}

// TestTheContextCheckFindsATransaction proves the check above can fail: it finds
// a planted unit of work, actor, user, operator and service in a context, and not
// a request id; an allowed place is let through only under its own name, and an
// allowed place that went away is reported.
func TestTheContextCheckFindsATransaction(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", `package x
func put(ctx context.Context, tx *Tx) context.Context { return context.WithValue(ctx, txKey{}, tx) }
func get(ctx context.Context) *Tx { t, _ := ctx.Value(txKey{}).(*Tx); return t }
func fine(ctx context.Context) context.Context { _ = ctx.Value(requestIDKey{}); return context.WithValue(ctx, clientAddrKey{}, "a") }
func acting(ctx context.Context, a actor.Actor) context.Context { return context.WithValue(ctx, key{}, a) }
func byUser(ctx context.Context) uuid.UUID { u, _ := ctx.Value(userKey{}).(uuid.UUID); return u }
func withService(ctx context.Context, s *idempotency.Service) context.Context { return context.WithValue(ctx, depKey{}, s) }
func keyed(ctx context.Context, k keyed) context.Context { return context.WithValue(ctx, keyedKey{}, &keyed{svc: nil}) }
func authenticate(ctx context.Context, o *operators.Operator) context.Context { return context.WithValue(ctx, operatorKey{}, o) }
`, 0)
	require.NoError(t, err)
	found := inContext(fset, f)
	require.Equal(t, []string{
		"x.put@x.go:2:64: a unit of work",
		"x.get@x.go:3:45: a unit of work",
		"x.acting@x.go:5:74: who acted",
		"x.byUser@x.go:6:54: who acted",
		"x.withService@x.go:7:88: a service",
		"x.keyed@x.go:8:67: a service",
		"x.authenticate@x.go:9:88: who acted",
	}, found)
	places, stale := notAllowed(found)
	require.Equal(t, found, places, "package x is none of the allowed places")
	require.Equal(t, transportAuthentication, stale)

	found = []string{"operatorapi.authenticate@router.go:1:1: who acted", "httpapi.WithPrincipal@principal.go:1:1: who acted",
		"httpapi.put@x.go:1:1: a unit of work"}
	places, stale = notAllowed(found)
	require.Equal(t, []string{"httpapi.put@x.go:1:1: a unit of work"}, places)
	require.Equal(t, []string{"operatorapi.operatorFrom", "operatorapi.replay", "httpapi.principalFrom"}, stale)
}
