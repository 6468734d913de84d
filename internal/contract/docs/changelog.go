package docs

import (
	"bytes"
	"net/http"

	"github.com/labstack/echo/v4"
)

// ChangelogPath serves the API changelog (openapi/CHANGELOG.md) as written, so a
// partner can see what each released contract version changed without the
// repository.
const ChangelogPath = PagePath + "/changelog"

// RegisterChangelog serves md at ChangelogPath for GET and HEAD, without a key
// (like the reference page, it holds nothing secret).
func RegisterChangelog(e *echo.Echo, md []byte) {
	md = bytes.Clone(md)
	e.Match([]string{http.MethodGet, http.MethodHead}, ChangelogPath, func(c echo.Context) error {
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, "text/markdown; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		return serveBytes(c, md)
	})
}
