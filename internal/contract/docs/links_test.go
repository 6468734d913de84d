package docs_test

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"partnerd/internal/contract/docs"
	"partnerd/internal/contract/docs/ops"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/openapi"
)

// fetched is one answer of the running service, after redirects.
type fetched struct {
	status int
	typ    string
	body   string
	final  string // the path answered after redirects
}

func fetch(t *testing.T, root, path string) fetched {
	t.Helper()
	res, err := http.Get(root + path)
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return fetched{status: res.StatusCode, typ: res.Header.Get("Content-Type"), body: string(b), final: res.Request.URL.Path}
}

// linkRe finds what a page makes the browser request or the reader follow.
var linkRe = regexp.MustCompile(`\s(?:href|src)="([^"]*)"`)

// docsPage reports whether the answer at path is a docs page whose links the
// crawl follows in turn.
func docsPage(path string, f fetched) bool {
	return strings.HasPrefix(f.typ, "text/html") &&
		(path == docs.PagePath || strings.HasPrefix(path, docs.PagePath+"/") || path == docs.OperatorPagePath)
}

// TestServedDocsHaveNoDeadLink follows, on the running service, every link of
// every docs page reachable from /docs (the reference pages, the guides' index,
// every guide, the changelog, the operations files and the runbook): each answers
// 200 after redirects, and a link to a section names an id the page has. Links
// to other hosts are not followed (the test runs offline); a guide's example
// address of the service (localhost:8080) is followed on the test's service.
func TestServedDocsHaveNoDeadLink(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}, nil)
	root, err := url.Parse(env.Root)
	require.NoError(t, err)

	pages := map[string]fetched{} // every path fetched
	get := func(path string) fetched {
		if f, ok := pages[path]; ok {
			return f
		}
		f := fetch(t, env.Root, path)
		pages[path] = f
		return f
	}
	queue := []string{docs.PagePath}
	crawled := map[string]bool{}
	var dead []string
	followed := 0
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		if crawled[page] {
			continue
		}
		crawled[page] = true
		base := &url.URL{Scheme: root.Scheme, Host: root.Host, Path: page}
		for _, m := range linkRe.FindAllStringSubmatch(get(page).body, -1) {
			raw := html.UnescapeString(m[1])
			if raw == "" {
				dead = append(dead, page+": an empty link (a URL the renderer refused)")
				continue
			}
			u, err := base.Parse(raw)
			if err != nil {
				dead = append(dead, page+": "+raw+": "+err.Error())
				continue
			}
			switch {
			case u.Scheme == "mailto":
				continue
			case u.Host == "localhost:8080": // the guides' address of a local service
			case u.Host != root.Host:
				continue
			}
			followed++
			target := get(u.Path)
			if target.status != http.StatusOK {
				dead = append(dead, page+": "+raw+" answers "+http.StatusText(target.status))
				continue
			}
			if u.Fragment != "" && strings.HasPrefix(target.typ, "text/html") && !strings.Contains(target.body, ` id="`+u.Fragment+`"`) {
				dead = append(dead, page+": "+raw+": no section #"+u.Fragment)
			}
			if docsPage(target.final, target) && !crawled[target.final] {
				queue = append(queue, target.final)
			}
		}
	}
	require.Empty(t, dead, "dead links in the served docs")
	t.Logf("%d links followed on %d pages", followed, len(crawled))

	// The crawl reached every page there is, so no page escaped the check.
	want := []string{docs.PagePath, docs.OperatorPagePath, docs.GuidePath, docs.ChangelogPath, docs.OpsPath + "/", docs.RunbookPath}
	for _, name := range docs.Guides() {
		want = append(want, docs.GuidePath+"/"+name)
	}
	for _, p := range want {
		require.True(t, crawled[p], "%s is not linked from the docs", p)
	}
	for _, p := range want[2:] {
		res, err := http.Get(env.Root + p)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, docs.PageCSP, res.Header.Get("Content-Security-Policy"), p)
		require.NotContains(t, pages[p].body, "<script", p)
	}
}

// contract is one API's operations: its base path (its first server's path) and
// each path template's methods.
type contract struct {
	base  string
	paths map[string][]string
}

func loadContract(t *testing.T, spec []byte) contract {
	t.Helper()
	var doc struct {
		Servers []struct {
			URL string `yaml:"url"`
		} `yaml:"servers"`
		Paths map[string]map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(spec, &doc))
	require.NotEmpty(t, doc.Servers)
	u, err := url.Parse(doc.Servers[0].URL)
	require.NoError(t, err)
	c := contract{base: u.Path, paths: map[string][]string{}}
	for p, ops := range doc.Paths {
		for m := range ops {
			c.paths[p] = append(c.paths[p], strings.ToUpper(m))
		}
	}
	return c
}

// has reports whether the contract has path (relative to its base) for method
// ("" for any): each segment equal, or the contract's a parameter. A parameter in
// the path ({id}) only matches one in the contract.
func (c contract) has(method, path string) bool {
	segs := strings.Split(path, "/")
	for tmpl, methods := range c.paths {
		if method != "" && !slices.Contains(methods, method) {
			continue
		}
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		match := true
		for i := range ts {
			param := strings.HasPrefix(ts[i], "{")
			if ts[i] != segs[i] && (!param || segs[i] == "") || !param && strings.HasPrefix(segs[i], "{") {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

var (
	// methodPath is an operation named in prose: GET /transactions/{id}.
	methodPath = regexp.MustCompile("\\b(GET|POST|PUT|PATCH|DELETE|HEAD) +(/[^\\s`'\")\\],;]*)")
	// apiPath is a path that looks like one of an API, with or without a method:
	// under /api/, or under a version or an API's name at the root.
	apiPath = regexp.MustCompile("(?:^|[\\s(`'\"])(/(?:api|v[0-9]+|operator|partner)/[^\\s`'\")\\],;]*)")
)

// namedPaths returns the operations (method, path) and the API-looking paths
// (method "") named in md, the query and a sentence's last dot left out.
func namedPaths(md string) [][2]string {
	clean := func(p string) string {
		p, _, _ = strings.Cut(p, "?")
		return strings.TrimRight(p, ".:")
	}
	var out [][2]string
	for _, m := range methodPath.FindAllStringSubmatch(md, -1) {
		out = append(out, [2]string{m[1], clean(m[2])})
	}
	for _, m := range apiPath.FindAllStringSubmatch(md, -1) {
		out = append(out, [2]string{"", clean(m[1])})
	}
	return out
}

// TestDocsNameOnlyContractPaths: every API path the guides and the runbook name
// is in a contract: a full path (/api/v1/operator/overview) in the API its base
// path names, an operation relative to a base (POST /partners/{id}/users) in
// either contract with that method. A path outside both (GET /readyz, GET
// /docs) must be one the running service answers with GET; any other fails,
// like /operator/v1/overview, which no contract has.
func TestDocsNameOnlyContractPaths(t *testing.T) {
	t.Parallel()
	partner, operator := loadContract(t, openapi.PartnerYAML), loadContract(t, openapi.OperatorYAML)
	require.Equal(t, "/api/v1/partner", partner.base)
	require.Equal(t, "/api/v1/operator", operator.base)
	files := map[string]string{"runbook.md": string(ops.RunbookMD)}
	for _, name := range docs.Guides() {
		md, _ := docs.Guide(name)
		files[name+".md"] = string(md)
	}

	var env *apitest.Env // started on the first path no contract has
	answers := func(path string) bool {
		if strings.Contains(path, "{") || strings.Contains(path, "<") {
			return false
		}
		if env == nil {
			env = apitest.Start(t, testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}, nil)
		}
		f := fetch(t, env.Root, path)
		return f.status != http.StatusNotFound && f.status != http.StatusMethodNotAllowed
	}
	checked := 0
	var unknown []string
	for file, md := range files {
		for _, np := range namedPaths(md) {
			method, path := np[0], np[1]
			checked++
			known := false
			switch {
			case path == partner.base || path == operator.base:
				known = method == ""
			case strings.HasPrefix(path, partner.base+"/"):
				known = partner.has(method, strings.TrimPrefix(path, partner.base))
			case strings.HasPrefix(path, operator.base+"/"):
				known = operator.has(method, strings.TrimPrefix(path, operator.base))
			case method != "" && (partner.has(method, path) || operator.has(method, path)):
				known = true
			default:
				known = (method == "" || method == http.MethodGet) && answers(path)
			}
			if !known {
				unknown = append(unknown, file+": "+strings.TrimSpace(method+" "+path))
			}
		}
	}
	t.Logf("%d paths checked", checked)
	require.Greater(t, checked, 100, "the guides name the API's paths")
	require.Empty(t, unknown, "paths in the docs that no contract has")
}

// The path check finds what it is for: an operation of no contract, a path
// under the wrong base, a method the path does not have.
func TestNamedPathsFindsUnknownPaths(t *testing.T) {
	t.Parallel()
	partner, operator := loadContract(t, openapi.PartnerYAML), loadContract(t, openapi.OperatorYAML)
	got := namedPaths("See `GET /operator/v1/overview`, then GET /transactions/{id}. And `/api/v1/operator/overview?x=1`; PUT /quotes.")
	require.Equal(t, [][2]string{
		{"GET", "/operator/v1/overview"}, {"GET", "/transactions/{id}"}, {"PUT", "/quotes"},
		{"", "/operator/v1/overview"}, {"", "/api/v1/operator/overview"},
	}, got)
	require.True(t, partner.has("GET", "/transactions/{id}"))
	require.True(t, partner.has("GET", "/transactions/0b6a"))
	require.False(t, partner.has("PUT", "/quotes"))
	require.False(t, partner.has("GET", "/operator/v1/overview"))
	require.False(t, operator.has("GET", "/operator/v1/overview"))
	require.True(t, operator.has("", "/overview"))
	require.False(t, operator.has("GET", "/transactions/{id}/nothing"))
}
