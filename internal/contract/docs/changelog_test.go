package docs_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"partnerd/internal/contract/docs"
	"partnerd/openapi"
)

// TestChangelogServedVerbatim: /docs/changelog answers the committed changelog,
// which names the partner contract's current version.
func TestChangelogServedVerbatim(t *testing.T) {
	t.Parallel()
	e := echo.New()
	docs.RegisterChangelog(e, openapi.ChangelogMD)
	rec := do(e, http.MethodGet, docs.ChangelogPath, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/markdown; charset=utf-8", rec.Header().Get("Content-Type"))
	want, err := os.ReadFile("../../../openapi/CHANGELOG.md")
	require.NoError(t, err)
	require.Equal(t, string(want), rec.Body.String())
	spec, err := openapi.LoadVersion(openapi.PartnerYAML)
	require.NoError(t, err)
	require.Contains(t, rec.Body.String(), "## partner "+spec, "the changelog has an entry for the served contract's version")
	rec = do(e, http.MethodHead, docs.ChangelogPath, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Empty(t, rec.Body.String())
}

// TestOpsFilesServed: the alert rules, the runbook and the dashboard are served
// as the binary embeds them, each with its type.
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
}

// TestGuidesServed: every guide of internal/contract/docs/guide is served as the binary
// embeds it, at its name and at its file name, and the index links to each.
func TestGuidesServed(t *testing.T) {
	t.Parallel()
	e := echo.New()
	docs.RegisterGuides(e)
	files, err := os.ReadDir("guide")
	require.NoError(t, err)
	require.Len(t, docs.Guides(), len(files), "every file in guide/ is a guide")
	index := do(e, http.MethodGet, docs.GuidePath, nil)
	require.Equal(t, http.StatusOK, index.Code)
	require.Equal(t, "text/markdown; charset=utf-8", index.Header().Get("Content-Type"))
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".md")
		want, err := os.ReadFile("guide/" + f.Name())
		require.NoError(t, err)
		for _, p := range []string{docs.GuidePath + "/" + name, docs.GuidePath + "/" + f.Name()} {
			rec := do(e, http.MethodGet, p, nil)
			require.Equal(t, http.StatusOK, rec.Code, p)
			require.Equal(t, "text/markdown; charset=utf-8", rec.Header().Get("Content-Type"), p)
			require.Equal(t, string(want), rec.Body.String(), p)
		}
		require.Contains(t, index.Body.String(), "("+docs.GuidePath+"/"+name+")", "the index links to %s", name)
		rec := do(e, http.MethodHead, docs.GuidePath+"/"+name, nil)
		require.Equal(t, http.StatusOK, rec.Code)
		require.Empty(t, rec.Body.String())
	}
	require.Equal(t, http.StatusNotFound, do(e, http.MethodGet, docs.GuidePath+"/nothing", nil).Code)
}
