package docs_test

import (
	"html"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"partnerd/internal/contract/docs"
	"partnerd/internal/contract/docs/ops"
	"partnerd/openapi"
)

// TestChangelogServed: /docs/changelog is the committed changelog as a page,
// which names the partner contract's current version, and /docs/changelog.md the
// changelog as written.
func TestChangelogServed(t *testing.T) {
	t.Parallel()
	e := echo.New()
	docs.RegisterChangelog(e, openapi.ChangelogMD)
	spec, err := openapi.LoadVersion(openapi.PartnerYAML)
	require.NoError(t, err)
	page := do(e, http.MethodGet, docs.ChangelogPath, nil)
	require.Equal(t, http.StatusOK, page.Code)
	require.Equal(t, "text/html; charset=UTF-8", page.Header().Get("Content-Type"))
	require.Equal(t, docs.PageCSP, page.Header().Get("Content-Security-Policy"))
	require.Contains(t, page.Body.String(), ">partner "+spec+"</h2>", "the changelog has an entry for the served contract's version")

	rec := do(e, http.MethodGet, docs.ChangelogPath+".md", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/markdown; charset=utf-8", rec.Header().Get("Content-Type"))
	want, err := os.ReadFile("../../../openapi/CHANGELOG.md")
	require.NoError(t, err)
	require.Equal(t, string(want), rec.Body.String())
	rec = do(e, http.MethodHead, docs.ChangelogPath, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Empty(t, rec.Body.String())
}

// TestOpsFilesServed: the alert rules, the runbook and the dashboard are served
// as the binary embeds them, each with its type; the runbook is a page too, and
// /docs/ops/ lists them.
func TestOpsFilesServed(t *testing.T) {
	t.Parallel()
	e := echo.New()
	docs.RegisterOps(e)
	for name, typ := range map[string]string{"alerts.yml": "application/yaml", "runbook.md": "text/markdown; charset=utf-8", "dashboard.json": "application/json"} {
		rec := do(e, http.MethodGet, docs.OpsPath+"/"+name, nil)
		require.Equal(t, http.StatusOK, rec.Code, name)
		require.Equal(t, typ, rec.Header().Get("Content-Type"), name)
		want, err := os.ReadFile("ops/" + name)
		require.NoError(t, err)
		require.Equal(t, string(want), rec.Body.String(), name)
	}
	require.Equal(t, http.StatusNotFound, do(e, http.MethodGet, docs.OpsPath+"/ops.go", nil).Code)

	index := do(e, http.MethodGet, docs.OpsPath+"/", nil)
	require.Equal(t, http.StatusOK, index.Code)
	require.Equal(t, "text/html; charset=UTF-8", index.Header().Get("Content-Type"))
	for _, link := range []string{`href="runbook"`, `href="alerts.yml"`, `href="dashboard.json"`} {
		require.Contains(t, index.Body.String(), link)
	}
	rec := do(e, http.MethodGet, docs.OpsPath, nil)
	require.Equal(t, http.StatusMovedPermanently, rec.Code)
	require.Equal(t, "ops/", rec.Header().Get("Location"))

	// Each alert's section has the anchor its runbook_url names (the alert's
	// name in lower case), on the page.
	runbook := do(e, http.MethodGet, docs.RunbookPath, nil)
	require.Equal(t, http.StatusOK, runbook.Code)
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(ops.RunbookMD), -1) {
		require.Contains(t, runbook.Body.String(), `<h2 id="`+strings.ToLower(m[1])+`">`)
	}
}

// TestGuidesServed: every guide of internal/contract/docs/guide is served as a
// page at its name and as the binary embeds it at its file name, and the index
// links to each.
func TestGuidesServed(t *testing.T) {
	t.Parallel()
	e := echo.New()
	docs.RegisterGuides(e)
	files, err := os.ReadDir("guide")
	require.NoError(t, err)
	require.Len(t, docs.Guides(), len(files), "every file in guide/ is a guide")
	index := do(e, http.MethodGet, docs.GuidePath, nil)
	require.Equal(t, http.StatusOK, index.Code)
	require.Equal(t, "text/html; charset=UTF-8", index.Header().Get("Content-Type"))
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".md")
		want, err := os.ReadFile("guide/" + f.Name())
		require.NoError(t, err)
		raw := do(e, http.MethodGet, docs.GuidePath+"/"+f.Name(), nil)
		require.Equal(t, http.StatusOK, raw.Code)
		require.Equal(t, "text/markdown; charset=utf-8", raw.Header().Get("Content-Type"))
		require.Equal(t, string(want), raw.Body.String())

		page := do(e, http.MethodGet, docs.GuidePath+"/"+name, nil)
		require.Equal(t, http.StatusOK, page.Code)
		require.Equal(t, "text/html; charset=UTF-8", page.Header().Get("Content-Type"))
		require.Equal(t, docs.PageCSP, page.Header().Get("Content-Security-Policy"))
		title, _ := docs.GuideTitle(name)
		require.Contains(t, page.Body.String(), "<title>"+html.EscapeString(title)+" · partnerd docs</title>")
		require.Contains(t, page.Body.String(), `<a href="`+f.Name()+`">`, "the page links its Markdown")

		require.Contains(t, index.Body.String(), `<a href="guide/`+name+`">`, "the index links to %s", name)
		rec := do(e, http.MethodHead, docs.GuidePath+"/"+name, nil)
		require.Equal(t, http.StatusOK, rec.Code)
		require.Empty(t, rec.Body.String())
	}
	require.Equal(t, http.StatusNotFound, do(e, http.MethodGet, docs.GuidePath+"/nothing", nil).Code)
	rec := do(e, http.MethodGet, docs.GuidePath+"/", nil)
	require.Equal(t, http.StatusMovedPermanently, rec.Code)
	require.Equal(t, "../guide", rec.Header().Get("Location"))
}
