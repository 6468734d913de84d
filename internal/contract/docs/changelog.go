package docs

import (
	"bytes"

	"github.com/labstack/echo/v4"
)

// ChangelogPath serves the API changelog (openapi/CHANGELOG.md) as a page, so a
// partner can see what each released contract version changed without the
// repository; ChangelogPath.md serves it as written.
const ChangelogPath = PagePath + "/changelog"

// RegisterChangelog serves md, the changelog, at ChangelogPath as a page and at
// ChangelogPath.md as written, for GET and HEAD, without a key (like the
// reference page, it holds nothing secret).
func RegisterChangelog(e *echo.Echo, md []byte) {
	registerStatic(e)
	servePage(e, document{source: "openapi/CHANGELOG.md", path: ChangelogPath, md: bytes.Clone(md)}, ChangelogPath+".md")
}
