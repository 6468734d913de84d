package docs

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/labstack/echo/v4"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"partnerd/internal/web"
	"partnerd/internal/web/webkit"
)

// The Markdown of the repository (the guides, the changelog, the runbook) is
// served as HTML pages in the console's look: one Markdown library (goldmark,
// GitHub's dialect, so tables render as they do in the repository), the console's
// stylesheet and Content-Security-Policy (no script), and the links between the
// files rewritten to where each file is served. The Markdown stays the source:
// a link is written as in the repository (guide/operators.md → configuration.md),
// works there, and works served.
const (
	// StaticPath holds the pages' stylesheets: the console's own (webkit's) and
	// the few rules Markdown needs beyond it.
	StaticPath = PagePath + "/static"
	// ScreenshotsPath serves the console's and the dashboard's screenshots the
	// guides show, at ScreenshotsPath/<site>/<file>.png.
	ScreenshotsPath = PagePath + "/screenshots"
)

// PageCSP is the pages' Content-Security-Policy: the console's, which allows this
// origin's stylesheets and images and no script at all.
const PageCSP = webkit.CSP

// repoDir is this package's place in the repository: the guides and the runbook
// live under it, and their relative links start from there.
const repoDir = "internal/contract/docs"

//go:embed static/docs.css
var docsCSS []byte

// document is one Markdown file served as a page.
type document struct {
	// source is the file's path in the repository: its relative links start there.
	source string
	// path is where the page is served.
	path string
	md   []byte
}

// servedPath returns where the repository's file at repoPath (cleaned, relative to
// the repository's root) is served, if the binary serves it: what a link to it in
// a served page is rewritten to.
func servedPath(repoPath string) (string, bool) {
	switch repoPath {
	case repoDir + "/guide":
		return GuidePath, true
	case repoDir + "/ops":
		return OpsPath + "/", true
	case repoDir + "/ops/runbook.md":
		return RunbookPath, true
	case "openapi/CHANGELOG.md":
		return ChangelogPath, true
	case "openapi/partner.yaml":
		return SpecPath, true
	case "openapi/operator.yaml":
		return OperatorSpecPath, true
	}
	if name, ok := strings.CutPrefix(repoPath, repoDir+"/guide/"); ok {
		if name, ok := strings.CutSuffix(name, ".md"); ok {
			if _, ok := Guide(name); ok {
				return GuidePath + "/" + name, true
			}
		}
		return "", false
	}
	if name, ok := strings.CutPrefix(repoPath, repoDir+"/ops/"); ok {
		if _, ok := opsFiles[name]; ok {
			return OpsPath + "/" + name, true
		}
		return "", false
	}
	if rest, ok := strings.CutPrefix(repoPath, "internal/web/"); ok {
		site, file, _ := strings.Cut(rest, "/testdata/")
		if _, err := fs.Stat(web.Screenshots, rest); err == nil && path.Ext(file) == ".png" && !strings.Contains(file, "/") {
			return ScreenshotsPath + "/" + site + "/" + file, true
		}
	}
	return "", false
}

// relativeURL returns the URL of the path to relative to the page at from (both
// absolute paths), so a page keeps working when a reverse proxy mounts the
// service under a prefix. A path ending in "/" is a directory.
func relativeURL(from, to string) string {
	dir := from
	if !strings.HasSuffix(dir, "/") {
		dir = path.Dir(from)
	}
	var fromSegs []string
	if d := strings.Trim(dir, "/"); d != "" {
		fromSegs = strings.Split(d, "/")
	}
	toSegs := strings.Split(strings.TrimPrefix(to, "/"), "/")
	i := 0
	for i < len(fromSegs) && i < len(toSegs)-1 && fromSegs[i] == toSegs[i] {
		i++
	}
	out := strings.Repeat("../", len(fromSegs)-i) + strings.Join(toSegs[i:], "/")
	if out == "" {
		return "./"
	}
	return out
}

// rewriteLink returns what a link written in the Markdown at source (a
// repository path) becomes on the page served at page: a link to a repository
// file the binary serves points to where it is served; URLs, fragments and
// absolute paths are kept, and so is a link to a file that is not served (the
// docs' link test reports it).
func rewriteLink(source, page, dest string) string {
	if dest == "" || strings.HasPrefix(dest, "#") || strings.HasPrefix(dest, "/") || strings.Contains(strings.SplitN(dest, "/", 2)[0], ":") {
		return dest
	}
	p, suffix := dest, ""
	if i := strings.IndexAny(dest, "?#"); i >= 0 {
		p, suffix = dest[:i], dest[i:]
	}
	served, ok := servedPath(path.Join(path.Dir(source), p))
	if !ok {
		return dest
	}
	return relativeURL(page, served) + suffix
}

// sourceKey carries the document being rendered to the link rewriter.
var sourceKey = parser.NewContextKey()

// pageTransformer rewrites the links and images of a document (rewriteLink),
// gives its tables the console's table classes (stackTable), and drops its HTML comments (the
// guide runner's markers, invisible on GitHub too).
type pageTransformer struct{}

func (pageTransformer) Transform(doc *ast.Document, source text.Reader, pc parser.Context) {
	d, _ := pc.Get(sourceKey).(document)
	var comments []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock:
			if n.HTMLBlockType == ast.HTMLBlockType2 {
				comments = append(comments, n)
			}
		case *ast.Link:
			n.Destination = []byte(rewriteLink(d.source, d.path, string(n.Destination)))
		case *ast.Image:
			n.Destination = []byte(rewriteLink(d.source, d.path, string(n.Destination)))
		case *extast.Table:
			stackTable(n, source.Source())
		}
		return ast.WalkContinue, nil
	})
	for _, n := range comments {
		n.Parent().RemoveChild(n.Parent(), n)
	}
}

// stackTable gives t the console's classes of a main table, which kit.css turns
// into a card per row on a phone, each cell labelled with its column's name
// (data-label, the header's text), so no column is ever off-screen.
func stackTable(t *extast.Table, source []byte) {
	t.SetAttributeString("class", []byte("grid stack"))
	var labels []string
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		i := 0
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			if _, header := row.(*extast.TableHeader); header {
				labels = append(labels, plainText(cell, source))
			} else if i < len(labels) && labels[i] != "" {
				cell.SetAttributeString("data-label", []byte(labels[i]))
			}
			i++
		}
	}
}

// plainText is the text of n and its descendants, without markup.
func plainText(n ast.Node, source []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch n := n.(type) {
			case *ast.Text:
				b.Write(n.Segment.Value(source))
			case *ast.String:
				b.Write(n.Value)
			}
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}

// markdown is the one Markdown renderer: GitHub's dialect, headings with ids as
// GitHub makes them (so a link to guide.md#section works served too, and the
// alerts' runbook_url anchors land on their sections), and without the unsafe
// option: raw HTML in the Markdown is left out and dangerous URLs emptied.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(
		parser.WithAutoHeadingID(),
		parser.WithASTTransformers(util.Prioritized(pageTransformer{}, 1000)),
	),
)

// githubIDs makes heading ids as GitHub does: lower case, letters, digits, "-"
// and "_" kept, spaces made "-", everything else dropped; a repeated id gets -1,
// -2, ….
type githubIDs struct{ used map[string]bool }

func (g *githubIDs) Generate(value []byte, _ ast.NodeKind) []byte {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(string(value))) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.Is(unicode.Mn, r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	base := b.String()
	id := base
	for n := 1; g.used[id]; n++ {
		id = base + "-" + strconv.Itoa(n)
	}
	g.used[id] = true
	return []byte(id)
}

func (g *githubIDs) Put(value []byte) { g.used[string(value)] = true }

// navLink is one link of the pages' header.
type navLink struct {
	Text, Href string
	Current    bool
}

// layout is every page: the console's header and stylesheet around the rendered
// Markdown, and a link to the Markdown itself where it is served.
var layout = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · partnerd docs</title>
<link rel="stylesheet" href="{{.Kit}}">
<link rel="stylesheet" href="{{.Style}}">
</head>
<body>
<header class="top">
<a class="brand" href="{{.Home}}">partnerd docs</a>
<nav>{{range .Nav}}<a href="{{.Href}}"{{if .Current}} aria-current="page"{{end}}>{{.Text}}</a>
{{end}}</nav>
</header>
<main class="doc">
{{.Body}}
{{- if .Markdown}}
<p class="note">This page is rendered from <a href="{{.Markdown}}">{{.MarkdownName}}</a>.</p>
{{- end}}
</main>
</body>
</html>
`))

// nav is the header's links, in a reader's order.
var nav = []struct{ text, path string }{
	{"API reference", PagePath},
	{"Operator API reference", OperatorPagePath},
	{"Guides", GuidePath},
	{"Changelog", ChangelogPath},
	{"Operations", OpsPath + "/"},
	{"Runbook", RunbookPath},
}

// render returns d as a page; raw, when not empty, is where its Markdown is
// served.
func render(d document, raw string) []byte {
	var body bytes.Buffer
	ctx := parser.NewContext(parser.WithIDs(&githubIDs{used: map[string]bool{}}))
	ctx.Set(sourceKey, d)
	if err := markdown.Convert(d.md, &body, parser.WithContext(ctx)); err != nil {
		panic(err) // writing to a bytes.Buffer does not fail
	}
	title, _, _ := strings.Cut(string(d.md), "\n")
	title = strings.TrimSpace(strings.TrimPrefix(title, "# "))
	data := map[string]any{
		"Title": title,
		"Kit":   relativeURL(d.path, StaticPath+"/kit.css"),
		"Style": relativeURL(d.path, StaticPath+"/docs.css"),
		"Home":  relativeURL(d.path, GuidePath),
		"Body":  template.HTML(body.String()), //nolint:gosec // goldmark without the unsafe option: no raw HTML, no dangerous URL
	}
	var links []navLink
	for _, l := range nav {
		links = append(links, navLink{Text: l.text, Href: relativeURL(d.path, l.path), Current: l.path == d.path})
	}
	data["Nav"] = links
	if raw != "" {
		data["Markdown"] = relativeURL(d.path, raw)
		data["MarkdownName"] = path.Base(d.source)
	}
	var out bytes.Buffer
	if err := layout.Execute(&out, data); err != nil {
		panic(err) // the template and its data are fixed here
	}
	return out.Bytes()
}

// servePage registers the page of d at d.path for GET and HEAD, rendered on the
// first request (the service's start stays as fast as before), and its Markdown at
// raw when raw is not empty.
func servePage(e *echo.Echo, d document, raw string) {
	page := sync.OnceValue(func() []byte { return render(d, raw) })
	methods := []string{http.MethodGet, http.MethodHead}
	e.Match(methods, d.path, func(c echo.Context) error {
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
		h.Set("Content-Security-Policy", PageCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		return serveBytes(c, page())
	})
	if raw != "" {
		e.Match(methods, raw, markdownHandler(d.md))
	}
}

// markdownHandler serves md as written, for tools and readers that want the
// source.
func markdownHandler(md []byte) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, "text/markdown; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		return serveBytes(c, md)
	}
}

// registerStatic serves what the pages load: the console's stylesheet, the
// Markdown rules beside it, and the screenshots the guides show. Each Register
// function that serves pages calls it; registering a route again only replaces
// its handler with the same one.
func registerStatic(e *echo.Echo) {
	methods := []string{http.MethodGet, http.MethodHead}
	e.Match(methods, StaticPath+"/kit.css", echo.WrapHandler(http.HandlerFunc(webkit.Stylesheet)))
	e.Match(methods, StaticPath+"/docs.css", func(c echo.Context) error {
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, "text/css; charset=utf-8")
		h.Set("Cache-Control", "max-age=300")
		return serveBytes(c, docsCSS)
	})
	// The screenshots are read and hashed on first demand, not at start.
	_ = fs.WalkDir(web.Screenshots, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		shot := sync.OnceValues(func() ([]byte, string) {
			body, _ := fs.ReadFile(web.Screenshots, p) // listed by the walk: present
			sum := sha256.Sum256(body)
			return body, `"` + hex.EncodeToString(sum[:16]) + `"`
		})
		site, file, _ := strings.Cut(p, "/testdata/")
		e.Match(methods, ScreenshotsPath+"/"+site+"/"+file, func(c echo.Context) error {
			body, etag := shot()
			h := c.Response().Header()
			h.Set(echo.HeaderContentType, "image/png")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-cache")
			h.Set("ETag", etag)
			return serveBytes(c, body)
		})
		return nil
	})
}
