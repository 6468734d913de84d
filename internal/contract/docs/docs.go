// Package docs serves the API reference: an HTML page that renders the OpenAPI
// contract with Redoc, the Redoc script itself, the contract as YAML, and the
// downloads the page links to (the Postman collections). Beside it, the
// repository's Markdown (the guides, the changelog, the runbook) is served as
// pages in the console's look and as written (pages.go), each linked from the
// reference page and from the others.
//
// Everything is served from the binary. The Redoc bundle is embedded (see
// assets/README.md and scripts/update-redoc.sh) rather than loaded from a CDN, so
// the page works on a machine with no internet access, cannot be broken or
// tampered with by a third party, and runs under a Content-Security-Policy that
// allows scripts from this origin only.
package docs

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Routes registered by Register, exported so that the router, its tests and any
// link to the reference use the same paths; the script's path is derived from
// PagePath because the page refers to it relatively.
const (
	// PagePath is the API reference page.
	PagePath = "/docs"
	// ScriptPath is the embedded Redoc bundle the page loads.
	ScriptPath = PagePath + "/" + scriptName
	// ScriptLicensePath is the notices of the libraries bundled into the script,
	// served because the bundle's header comment points at this file beside it.
	ScriptLicensePath = ScriptPath + ".LICENSE.txt"
	// SpecPath is the OpenAPI contract the page renders, also downloadable by
	// partners for their own tooling.
	SpecPath = "/openapi.yaml"
)

const scriptName = "redoc.standalone.js"

// ContentSecurityPolicy is sent with the page. Redoc needs: its script from this
// origin; inline styles (it injects styled-components CSS at run time); a web
// worker built from a blob: URL (its search index); fetching the spec from this
// origin; data: images and fonts (icons inlined in the bundle). Nothing else is
// allowed, in particular no inline or third-party script, so the page has no
// inline event handlers and no bootstrap script: Redoc finds the <redoc> element
// itself.
const ContentSecurityPolicy = "default-src 'none'; " +
	"script-src 'self'; " +
	"style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; " +
	"font-src 'self' data:; " +
	"connect-src 'self'; " +
	"worker-src 'self' blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// scriptMaxAge is how long browsers and proxies may keep the script without
// asking again. It is safe to be long because the page asks for the script with
// its content hash in the query string: a new Redoc version is a new URL.
const scriptMaxAge = 365 * 24 * time.Hour

//go:embed assets/redoc.standalone.js
var redocScript []byte

//go:embed assets/redoc.standalone.js.LICENSE.txt
var redocScriptLicense []byte

// pageTemplate is the whole page. The script URL is relative ("docs/…" from
// "/docs" resolves to "/docs/…"), so the page keeps working when the service is
// mounted under a path prefix by a reverse proxy; the spec URL is the fixed,
// documented SpecPath. %[1]s is the script's version tag, %[2]s the links to the
// guides (guideLinks): the reference is where the root leads a newcomer, so it
// lists every guide, the changelog and the runbook.
const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>partnerd API reference</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<nav style="font: 14px/1.5 sans-serif; padding: 8px 16px; border-bottom: 1px solid #ddd;">
<a href="docs/guide">Guides</a>: %[2]s &middot;
<a href="docs/changelog">Changelog</a> &middot;
<a href="docs/ops/">Operations</a> (<a href="docs/ops/runbook">runbook</a>)<br>
Download: <a href="` + SpecPath + `">the OpenAPI contract</a> &middot;
Postman: <a href="docs/postman/partner.json">partner API collection</a>,
<a href="docs/postman/operator.json">operator API collection</a>,
<a href="docs/postman/sandbox-environment.json">sandbox environment</a>
</nav>
<noscript>The API reference needs JavaScript. The contract itself is at <a href="` + SpecPath + `">` + SpecPath + `</a>.</noscript>
<redoc spec-url="` + SpecPath + `"></redoc>
<script src="docs/` + scriptName + `?v=%[1]s"></script>
</body>
</html>
`

// guideLinks is the page's list of the guides, each linked by its title.
func guideLinks() string {
	var links []string
	for _, name := range Guides() {
		title, _ := GuideTitle(name)
		links = append(links, `<a href="docs/guide/`+name+`">`+html.EscapeString(title)+`</a>`)
	}
	return strings.Join(links, ", ")
}

// Docs holds the page, the script and the spec, all prepared once in New so a
// request only copies bytes.
type Docs struct {
	spec     []byte
	specETag string

	page []byte

	script         []byte
	scriptETag     string
	scriptGzipETag string
}

// scriptGzip is the script compressed once per process, on first demand: it
// shrinks the ~1 MB bundle to about a third for every browser that accepts gzip,
// and the service has no compression middleware of its own.
var scriptGzip = sync.OnceValue(func() []byte { return gzipBytes(redocScript) })

// New prepares the handlers for specYAML, the OpenAPI contract to publish. The
// bytes are copied, so the caller may reuse its slice; they are served exactly
// as given (JSON is valid YAML too, so an embedded JSON spec also works).
func New(specYAML []byte) *Docs {
	sum := sha256.Sum256(redocScript)
	version := hex.EncodeToString(sum[:8])
	specSum := sha256.Sum256(specYAML)
	return &Docs{
		spec:           bytes.Clone(specYAML),
		specETag:       `"` + hex.EncodeToString(specSum[:16]) + `"`,
		page:           fmt.Appendf(nil, pageTemplate, version, guideLinks()),
		script:         redocScript,
		scriptETag:     `"` + version + `"`,
		scriptGzipETag: `"` + version + `-gzip"`,
	}
}

// Register adds the documentation routes to e, for GET and HEAD. They sit
// outside the partner API's base path, so they need no API key. "/docs/" is
// redirected to "/docs" because the page's relative script URL only resolves
// correctly from the latter; the redirect is relative too, for the same reason
// as the script URL. The Postman collections of both APIs are registered here
// too (postman.go): the page links to them.
func (d *Docs) Register(e *echo.Echo) {
	methods := []string{http.MethodGet, http.MethodHead}
	e.Match(methods, PagePath, d.servePage)
	e.Match(methods, PagePath+"/", func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, "../docs")
	})
	e.Match(methods, ScriptPath, d.serveScript)
	e.Match(methods, ScriptLicensePath, func(c echo.Context) error {
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, echo.MIMETextPlainCharsetUTF8)
		h.Set("Cache-Control", "public, max-age=86400")
		return serveBytes(c, redocScriptLicense)
	})
	e.Match(methods, SpecPath, d.serveSpec)
	registerPostman(e)
}

func (d *Docs) servePage(c echo.Context) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// The page is tiny and names the current script version: always revalidate.
	h.Set("Cache-Control", "no-cache")
	return serveBytes(c, d.page)
}

func (d *Docs) serveScript(c echo.Context) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", fmt.Sprintf("public, max-age=%d, immutable", int(scriptMaxAge.Seconds())))
	h.Add(echo.HeaderVary, echo.HeaderAcceptEncoding)
	if acceptsGzip(c.Request()) {
		h.Set(echo.HeaderContentEncoding, "gzip")
		h.Set("ETag", d.scriptGzipETag)
		return serveBytes(c, scriptGzip())
	}
	h.Set("ETag", d.scriptETag)
	return serveBytes(c, d.script)
}

func (d *Docs) serveSpec(c echo.Context) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/yaml")
	h.Set("X-Content-Type-Options", "nosniff")
	// The contract changes with deployments: let clients revalidate by ETag.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", d.specETag)
	return serveBytes(c, d.spec)
}

// serveBytes writes b with the headers already set, using http.ServeContent for
// HEAD, conditional requests (If-None-Match against the ETag set by the caller)
// and ranges.
func serveBytes(c echo.Context, b []byte) error {
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(b))
	return nil
}

// acceptsGzip reports whether the request's Accept-Encoding admits gzip: listed
// (or matched by "*") with a non-zero quality. Finer ranking is not needed with a
// single alternative to identity.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values(echo.HeaderAcceptEncoding) {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.TrimSpace(coding)
			if !strings.EqualFold(coding, "gzip") && coding != "*" {
				continue
			}
			q := 1.0
			if k, val, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
				if err != nil {
					return false
				}
				q = f
			}
			return q > 0
		}
	}
	return false
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		panic(err) // only for an invalid level
	}
	// Writes to a bytes.Buffer cannot fail.
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}
