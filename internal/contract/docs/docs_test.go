package docs_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"partnerd/internal/contract/docs"
)

// newServer registers the docs on a fresh Echo, as the service does.
func newServer(t *testing.T, spec []byte) *echo.Echo {
	t.Helper()
	e := echo.New()
	docs.New(spec).Register(e)
	return e
}

func do(e *echo.Echo, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func contractYAML(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../../openapi/partner.yaml")
	require.NoError(t, err)
	return b
}

func TestPage(t *testing.T) {
	t.Parallel()
	e := newServer(t, contractYAML(t))

	rec := do(e, http.MethodGet, "/docs", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/html; charset=UTF-8", rec.Header().Get("Content-Type"))
	require.Equal(t, docs.ContentSecurityPolicy, rec.Header().Get("Content-Security-Policy"))
	require.Equal(t, "no-cache", rec.Header().Get("Cache-Control"))

	page := rec.Body.String()
	require.Contains(t, page, `<redoc spec-url="/openapi.yaml"></redoc>`)
	// The script is referenced relatively, versioned by its content hash.
	m := regexp.MustCompile(`<script src="(docs/redoc\.standalone\.js\?v=[0-9a-f]{16})"></script>`).FindStringSubmatch(page)
	require.NotNil(t, m, page)
	// Relative to /docs it resolves to the script's route.
	req := httptest.NewRequest(http.MethodGet, "/docs", nil)
	ref, err := req.URL.Parse(m[1])
	require.NoError(t, err)
	require.Equal(t, docs.ScriptPath, ref.Path)

	// CSP-friendly: no CDN, no inline script or handlers.
	require.NotContains(t, page, "http://")
	require.NotContains(t, page, "https://")
	require.Equal(t, 1, strings.Count(page, "<script"))
	require.NotRegexp(t, `(?i)\son[a-z]+=`, page)
}

func TestPageTrailingSlashRedirects(t *testing.T) {
	t.Parallel()
	e := newServer(t, []byte("openapi: 3.0.3\n"))

	rec := do(e, http.MethodGet, "/docs/", nil)
	require.Equal(t, http.StatusMovedPermanently, rec.Code)
	req := httptest.NewRequest(http.MethodGet, "/docs/", nil)
	loc, err := req.URL.Parse(rec.Header().Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "/docs", loc.Path)
}

func TestScript(t *testing.T) {
	t.Parallel()
	e := newServer(t, []byte("openapi: 3.0.3\n"))

	rec := do(e, http.MethodGet, "/docs/redoc.standalone.js", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/javascript; charset=utf-8", rec.Header().Get("Content-Type"))
	require.Equal(t, "public, max-age=31536000, immutable", rec.Header().Get("Cache-Control"))
	require.Empty(t, rec.Header().Get("Content-Encoding"))
	require.NotEmpty(t, rec.Header().Get("ETag"))
	body := rec.Body.Bytes()
	// The real bundle is about 1 MB; a stub or a pointer file would be tiny.
	require.Greater(t, len(body), 500_000)
	require.Contains(t, string(body[:200]), "redoc.standalone.js.LICENSE.txt")

	// Conditional request: unchanged script costs no body.
	again := do(e, http.MethodGet, "/docs/redoc.standalone.js", map[string]string{"If-None-Match": rec.Header().Get("ETag")})
	require.Equal(t, http.StatusNotModified, again.Code)
	require.Zero(t, again.Body.Len())

	// HEAD answers like GET without a body.
	head := do(e, http.MethodHead, "/docs/redoc.standalone.js", nil)
	require.Equal(t, http.StatusOK, head.Code)
	require.Zero(t, head.Body.Len())
}

func TestScriptGzip(t *testing.T) {
	t.Parallel()
	e := newServer(t, []byte("openapi: 3.0.3\n"))
	plain := do(e, http.MethodGet, "/docs/redoc.standalone.js", nil)

	rec := do(e, http.MethodGet, "/docs/redoc.standalone.js", map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "gzip", rec.Header().Get("Content-Encoding"))
	require.Contains(t, rec.Header().Values("Vary"), "Accept-Encoding")
	require.NotEqual(t, plain.Header().Get("ETag"), rec.Header().Get("ETag"))
	require.Less(t, rec.Body.Len(), plain.Body.Len()/2)
	zr, err := gzip.NewReader(rec.Body)
	require.NoError(t, err)
	got, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.True(t, bytes.Equal(plain.Body.Bytes(), got))

	refused := do(e, http.MethodGet, "/docs/redoc.standalone.js", map[string]string{"Accept-Encoding": "gzip;q=0"})
	require.Empty(t, refused.Header().Get("Content-Encoding"))
}

func TestScriptLicense(t *testing.T) {
	t.Parallel()
	e := newServer(t, []byte("openapi: 3.0.3\n"))

	rec := do(e, http.MethodGet, "/docs/redoc.standalone.js.LICENSE.txt", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/plain; charset=UTF-8", rec.Header().Get("Content-Type"))
	require.Contains(t, rec.Body.String(), "@license")
}

func TestSpecServedVerbatim(t *testing.T) {
	t.Parallel()
	spec := contractYAML(t)
	given := bytes.Clone(spec)
	d := docs.New(given)
	// New copies: a caller reusing its buffer does not change what is served.
	clear(given)
	e := echo.New()
	d.Register(e)

	rec := do(e, http.MethodGet, "/openapi.yaml", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/yaml", rec.Header().Get("Content-Type"))
	require.True(t, bytes.Equal(spec, rec.Body.Bytes()), "spec bytes differ")

	again := do(e, http.MethodGet, "/openapi.yaml", map[string]string{"If-None-Match": rec.Header().Get("ETag")})
	require.Equal(t, http.StatusNotModified, again.Code)
}

func TestInstancesAreIndependent(t *testing.T) {
	t.Parallel()
	a := newServer(t, []byte("a: 1\n"))
	b := newServer(t, []byte("b: 2\n"))
	require.Equal(t, "a: 1\n", do(a, http.MethodGet, "/openapi.yaml", nil).Body.String())
	require.Equal(t, "b: 2\n", do(b, http.MethodGet, "/openapi.yaml", nil).Body.String())
}

func TestScriptEncodingNegotiation(t *testing.T) {
	t.Parallel()
	e := newServer(t, []byte("openapi: 3.0.3\n"))
	for accept, gz := range map[string]bool{
		"":                   false,
		"identity":           false,
		"gzip":               true,
		"GZIP":               true,
		"deflate, gzip":      true,
		"gzip; q=0.5":        true,
		"gzip;q=0":           false,
		"gzip;q=0.000":       false,
		"*":                  true,
		"br;q=1, *;q=0":      false,
		"gzip;q=nonsense":    false,
		"x-gzip-like, zstd":  false,
		"zstd, gzip;q=0.001": true,
	} {
		rec := do(e, http.MethodGet, "/docs/redoc.standalone.js", map[string]string{"Accept-Encoding": accept})
		require.Equal(t, http.StatusOK, rec.Code, accept)
		if gz {
			require.Equal(t, "gzip", rec.Header().Get("Content-Encoding"), accept)
		} else {
			require.Empty(t, rec.Header().Get("Content-Encoding"), accept)
		}
	}
}
