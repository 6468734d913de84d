package docs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRelativeURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ from, to, want string }{
		{"/docs/guide/operators", "/docs/guide/configuration", "configuration"},
		{"/docs/guide/operations", "/docs/ops/runbook", "../ops/runbook"},
		{"/docs/guide", "/docs/guide/partners", "guide/partners"},
		{"/docs/guide", "/docs/guide", "guide"},
		{"/docs/ops/", "/docs/ops/runbook", "runbook"},
		{"/docs/ops/", "/docs/guide", "../guide"},
		{"/docs/ops/runbook", "/docs/ops/", "./"},
		{"/docs/guide/partners", "/openapi.yaml", "../../openapi.yaml"},
		{"/docs/changelog", "/docs", "../docs"},
		{"/docs", "/docs/guide", "docs/guide"},
	} {
		require.Equal(t, c.want, relativeURL(c.from, c.to), "%s → %s", c.from, c.to)
	}
}

// A link is written as in the repository and rewritten to where its target is
// served; what is not served, and what is not a repository path, is kept.
func TestRewriteLink(t *testing.T) {
	t.Parallel()
	guide := repoDir + "/guide/operations.md"
	for dest, want := range map[string]string{
		"partners.md":                                "partners",
		"development.md#tests":                       "development#tests",
		"../ops/runbook.md":                          "../ops/runbook",
		"../ops/alerts.yml":                          "../ops/alerts.yml",
		"../ops/":                                    "../ops/",
		"./":                                         "../guide",
		"../../../../openapi/CHANGELOG.md":           "../changelog",
		"../../../../openapi/operator.yaml":          "../../operator.yaml",
		"../../../web/console/testdata/x.png":        "../../../web/console/testdata/x.png", // no such screenshot
		"../../../web/console/testdata/overview.png": "../screenshots/console/overview.png",
		"nothing.md":                                 "nothing.md",
		"../../../../README.md":                      "../../../../README.md",
		"#metrics":                                   "#metrics",
		"/readyz":                                    "/readyz",
		"https://www.standardwebhooks.com/":          "https://www.standardwebhooks.com/",
	} {
		require.Equal(t, want, rewriteLink(guide, GuidePath+"/operations", dest), dest)
	}
}

// The pages render the Markdown's tables with the console's class, ids as GitHub
// makes them, and nothing unsafe: raw HTML is left out, a javascript: URL
// emptied, and the page has no script.
func TestRenderIsSafe(t *testing.T) {
	t.Parallel()
	md := "# T\n\n## Contract versions\n\n## Contract versions\n\n## `GET /overview` (the day)\n\n" +
		"| a | b |\n|---|---|\n| 1 | 2 |\n\n" +
		"<script>alert(1)</script>\n\n<b onclick=\"x()\">bold</b>\n\n[x](javascript:alert(1)) [y](operators.md)\n\n" +
		"<!-- guide-test: skip (why) -->\n"
	page := string(render(document{source: repoDir + "/guide/t.md", path: GuidePath + "/t", md: []byte(md)}, GuidePath+"/t.md"))
	require.Contains(t, page, `<table class="grid stack">`)
	require.Contains(t, page, `<td data-label="a">1</td>`)
	require.Contains(t, page, `<h2 id="contract-versions">`)
	require.Contains(t, page, `<h2 id="contract-versions-1">`)
	require.Contains(t, page, `<h2 id="get-overview-the-day">`)
	require.NotContains(t, page, "<script")
	require.NotContains(t, page, "onclick")
	require.NotContains(t, page, "javascript:")
	require.NotContains(t, page, "guide-test")
	require.Contains(t, page, `<a href="operators">y</a>`)
	require.Contains(t, page, `<a href="t.md">t.md</a>`, "the page links its Markdown")
	require.Contains(t, page, `<link rel="stylesheet" href="../static/kit.css">`)
	require.Contains(t, page, "<title>T · partnerd docs</title>")
	require.Equal(t, 1, strings.Count(page, "<h1"))
}
