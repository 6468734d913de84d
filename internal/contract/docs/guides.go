package docs

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
)

// GuidePath is where the guides are served: the Markdown files of
// internal/contract/docs/guide (the README links to them in the repository), each at
// GuidePath/<name> (or <name>.md, so the guides' relative links resolve), and an
// index at GuidePath.
const GuidePath = PagePath + "/guide"

//go:embed guide/*.md
var guideFS embed.FS

// guideOrder is the index's order: a newcomer's path through the service.
var guideOrder = []string{
	"partners", "webhooks", "payments", "operators", "dashboard", "chains",
	"configuration", "operations", "performance", "development",
}

// Guides returns the guides' names (file names without .md), in the index's order;
// a guide not in that order comes last, by name.
func Guides() []string {
	entries, err := fs.ReadDir(guideFS, "guide")
	if err != nil {
		panic(err) // embedded at build time
	}
	have := map[string]bool{}
	for _, e := range entries {
		have[strings.TrimSuffix(e.Name(), ".md")] = true
	}
	var out []string
	for _, name := range guideOrder {
		if have[name] {
			out = append(out, name)
			delete(have, name)
		}
	}
	for _, e := range entries {
		if name := strings.TrimSuffix(e.Name(), ".md"); have[name] {
			out = append(out, name)
		}
	}
	return out
}

// Guide returns the Markdown of the named guide and whether it exists.
func Guide(name string) ([]byte, bool) {
	if name == "" || strings.ContainsAny(name, "/\\") {
		return nil, false
	}
	b, err := guideFS.ReadFile(path.Join("guide", name+".md"))
	return b, err == nil
}

// guideIndex is the Markdown index of the guides: each one's title and link.
func guideIndex() []byte {
	var b strings.Builder
	b.WriteString("# partnerd guides\n\n")
	for _, name := range Guides() {
		md, _ := Guide(name)
		title, _, _ := strings.Cut(string(md), "\n")
		fmt.Fprintf(&b, "- [%s](%s/%s)\n", strings.TrimSpace(strings.TrimPrefix(title, "# ")), GuidePath, name)
	}
	b.WriteString("\nThe API reference is at " + PagePath + ", the changelog at " + ChangelogPath + ".\n")
	return []byte(b.String())
}

// RegisterGuides serves the guides under GuidePath for GET and HEAD, as Markdown,
// without a key (they hold nothing secret).
func RegisterGuides(e *echo.Echo) {
	index := guideIndex()
	serve := func(c echo.Context, body []byte) error {
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, "text/markdown; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		return serveBytes(c, body)
	}
	methods := []string{http.MethodGet, http.MethodHead}
	e.Match(methods, GuidePath, func(c echo.Context) error { return serve(c, index) })
	for _, name := range Guides() {
		body, _ := Guide(name)
		page := func(c echo.Context) error { return serve(c, body) }
		e.Match(methods, GuidePath+"/"+name, page)
		e.Match(methods, GuidePath+"/"+name+".md", page)
	}
}
