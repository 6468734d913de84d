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
// internal/contract/docs/guide (the README links to them in the repository), each
// as a page at GuidePath/<name> and as written at GuidePath/<name>.md, and an
// index of them at GuidePath.
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

// GuideTitle returns the named guide's title (its first heading) and its summary
// (the paragraph under the title, on one line), what the indexes show of it.
func GuideTitle(name string) (title, summary string) {
	md, ok := Guide(name)
	if !ok {
		return "", ""
	}
	first, rest, _ := strings.Cut(string(md), "\n")
	title = strings.TrimSpace(strings.TrimPrefix(first, "# "))
	var lines []string
	for line := range strings.SplitSeq(strings.TrimLeft(rest, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			break
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	return title, strings.Join(lines, " ")
}

// guideIndex is the Markdown of the index page: every guide with its summary,
// then the changelog, the runbook and the operations files. Its links are written
// as from a file in guide/ of the repository, like the guides' own (the summaries
// keep theirs).
func guideIndex() []byte {
	var b strings.Builder
	b.WriteString("# partnerd guides\n\n")
	b.WriteString("The guides, in a newcomer's order. Each is a Markdown file of the repository " +
		"(`" + repoDir + "/guide/`), served here as a page; their shell blocks run as written.\n\n")
	for _, name := range Guides() {
		title, summary := GuideTitle(name)
		fmt.Fprintf(&b, "- [%s](%s.md): %s\n", title, name, summary)
	}
	b.WriteString("\n## Beside the guides\n\n" +
		"- [API changelog](../../../../openapi/CHANGELOG.md): what each released contract changed.\n" +
		"- [Runbook](../ops/runbook.md): one section per alert: what it means, what to look at, what to do.\n" +
		"- [Operations files](../ops/): the alert rules, the runbook and the Grafana dashboard, as this version ships them.\n" +
		"- The API references (partner and operator) are linked at the top of every page.\n")
	return []byte(b.String())
}

// RegisterGuides serves the guides under GuidePath for GET and HEAD, each as a
// page and as written, and the index, without a key (they hold nothing secret).
// "GuidePath/" is redirected to the index, relatively like the reference page.
func RegisterGuides(e *echo.Echo) {
	registerStatic(e)
	servePage(e, document{source: repoDir + "/guide/index.md", path: GuidePath, md: guideIndex()}, "")
	e.Match([]string{http.MethodGet, http.MethodHead}, GuidePath+"/", func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, "../guide")
	})
	for _, name := range Guides() {
		md, _ := Guide(name)
		servePage(e, document{source: repoDir + "/guide/" + name + ".md", path: GuidePath + "/" + name, md: md}, GuidePath+"/"+name+".md")
	}
}
