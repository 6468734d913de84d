package docs_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"partnerd/internal/contract/docs"
	"partnerd/openapi"
)

// TestPostmanServed: the collections and the sandbox environment are served as
// committed in openapi/postman/, as JSON downloads with validators for caching;
// each collection carries its base URL and key as collection variables and sends
// the key in X-API-KEY, and the environment points both at a local make run.
func TestPostmanServed(t *testing.T) {
	t.Parallel()
	e := newServer(t, openapi.PartnerYAML)
	for path, file := range map[string]string{
		docs.PostmanPartnerPath:     "partner.postman_collection.json",
		docs.PostmanOperatorPath:    "operator.postman_collection.json",
		docs.PostmanEnvironmentPath: "sandbox.postman_environment.json",
	} {
		rec := do(e, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.Contains(t, rec.Header().Get("Content-Disposition"), `attachment; filename="partnerd-`)
		want, err := os.ReadFile("../../../openapi/postman/" + file)
		require.NoError(t, err)
		require.Equal(t, string(want), rec.Body.String(), "%s serves openapi/postman/%s", path, file)

		etag := rec.Header().Get("ETag")
		require.NotEmpty(t, etag)
		require.Equal(t, http.StatusNotModified, do(e, http.MethodGet, path, map[string]string{"If-None-Match": etag}).Code)
		head := do(e, http.MethodHead, path, nil)
		require.Equal(t, http.StatusOK, head.Code)
		require.Empty(t, head.Body.String())
	}

	for _, api := range []struct{ path, prefix, base string }{
		{docs.PostmanPartnerPath, "partner", "/api/v1/partner"},
		{docs.PostmanOperatorPath, "operator", "/api/v1/operator"},
	} {
		var col struct {
			Info struct {
				Schema string `json:"schema"`
			} `json:"info"`
			Auth struct {
				Type   string `json:"type"`
				APIKey []struct{ Key, Value string }
			} `json:"auth"`
			Variable []struct{ Key, Value string }
			Item     []json.RawMessage `json:"item"`
		}
		body := do(e, http.MethodGet, api.path, nil).Body.String()
		require.NoError(t, json.Unmarshal([]byte(body), &col))
		require.Contains(t, col.Info.Schema, "collection/v2.1.0")
		require.NotEmpty(t, col.Item)
		require.Equal(t, "apikey", col.Auth.Type)
		auth := map[string]string{}
		for _, kv := range col.Auth.APIKey {
			auth[kv.Key] = kv.Value
		}
		require.Equal(t, map[string]string{"key": "X-API-KEY", "value": "{{" + api.prefix + "ApiKey}}", "in": "header"}, auth)
		vars := map[string]string{}
		for _, v := range col.Variable {
			vars[v.Key] = v.Value
		}
		require.Contains(t, vars, api.prefix+"ApiKey")
		require.True(t, strings.HasSuffix(vars[api.prefix+"BaseUrl"], api.base), vars)
		require.Contains(t, body, `"{{`+api.prefix+`BaseUrl}}"`, "requests use the base URL variable")
		require.NotContains(t, body, "{{baseUrl}}")
	}

	var env struct {
		Values []struct{ Key, Value string }
	}
	require.NoError(t, json.Unmarshal(do(e, http.MethodGet, docs.PostmanEnvironmentPath, nil).Body.Bytes(), &env))
	vals := map[string]string{}
	for _, v := range env.Values {
		vals[v.Key] = v.Value
	}
	require.Equal(t, "http://localhost:8080/api/v1/partner", vals["partnerBaseUrl"])
	require.Equal(t, "http://localhost:8080/api/v1/operator", vals["operatorBaseUrl"])
	require.NotRegexp(t, `^sk_`, vals["partnerApiKey"], "a placeholder, not a key")
}

// TestPagesLinkDownloads: both reference pages link every guide, the changelog,
// the runbook, the contract and the Postman files, and each link resolves to a
// route that answers.
func TestPagesLinkDownloads(t *testing.T) {
	t.Parallel()
	e := echo.New()
	docs.New(openapi.PartnerYAML).Register(e)
	docs.RegisterChangelog(e, openapi.ChangelogMD)
	docs.RegisterOperator(e, openapi.OperatorYAML)
	docs.RegisterGuides(e)
	docs.RegisterOps(e)
	for page, spec := range map[string]string{docs.PagePath: docs.SpecPath, docs.OperatorPagePath: docs.OperatorSpecPath} {
		rec := do(e, http.MethodGet, page, nil)
		require.Equal(t, http.StatusOK, rec.Code)
		var got []string
		for _, m := range regexp.MustCompile(`<a href="([^"]+)">`).FindAllStringSubmatch(rec.Body.String(), -1) {
			u, err := httptest.NewRequest(http.MethodGet, page, nil).URL.Parse(m[1])
			require.NoError(t, err)
			got = append(got, u.Path)
			require.Equal(t, http.StatusOK, do(e, http.MethodGet, u.Path, nil).Code, "%s links %s", page, u.Path)
		}
		for _, name := range docs.Guides() {
			require.Contains(t, got, docs.GuidePath+"/"+name, "%s links the guide %s", page, name)
		}
		for _, want := range []string{spec, docs.GuidePath, docs.ChangelogPath, docs.RunbookPath, docs.PostmanPartnerPath, docs.PostmanOperatorPath, docs.PostmanEnvironmentPath} {
			require.Contains(t, got, want, "%s links %s", page, want)
		}
	}
}
