package docs

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"partnerd/internal/contract/docs/ops"
)

// OpsPath is where the operators' files are served: the Prometheus alert rules,
// the runbook they link to and the Grafana dashboard, the very bytes the binary
// was built and tested with, so what an operator loads matches the running
// version's metrics. OpsPath/ lists them.
const OpsPath = PagePath + "/ops"

// RunbookPath is the runbook as a page. Its sections' anchors are the alerts'
// names in lower case, as each rule's runbook_url expects, so this address can be
// the alerts' runbook_base_url; OpsPath/runbook.md serves it as written.
const RunbookPath = OpsPath + "/runbook"

// opsFiles are the files served as written, and their types.
var opsFiles = map[string]struct {
	body []byte
	typ  string
}{
	"alerts.yml":     {ops.AlertsYAML, "application/yaml"},
	"dashboard.json": {ops.DashboardJSON, echo.MIMEApplicationJSON},
}

// opsIndex is the Markdown of the page at OpsPath/, written as from a file beside
// the runbook in the repository.
const opsIndex = `# Operations files

What operators load next to the binary, as this version was built and tested
with (` + "`" + repoDir + "/ops/`" + ` in the repository):

- [The runbook](runbook.md): one section per alert: what it means, what to look at,
  what to do.
- [alerts.yml](alerts.yml): the Prometheus alert rules; each rule's ` + "`runbook_url`" + ` is the
  external label ` + "`runbook_base_url`" + ` plus its section's anchor.
- [dashboard.json](dashboard.json): the Grafana dashboard (import it, pick the
  Prometheus data source).

How to load them, and what the checks of ` + "`make test`" + ` keep true of them, is in
[Operations](../guide/operations.md).
`

// RegisterOps serves the operators' files under OpsPath for GET and HEAD,
// without a key (they hold nothing secret): the runbook as a page and as written,
// the rules and the dashboard as written, and the list of them at OpsPath/
// (where the README says they are), OpsPath redirecting there.
func RegisterOps(e *echo.Echo) {
	registerStatic(e)
	methods := []string{http.MethodGet, http.MethodHead}
	for name, f := range opsFiles {
		e.Match(methods, OpsPath+"/"+name, func(c echo.Context) error {
			h := c.Response().Header()
			h.Set(echo.HeaderContentType, f.typ)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-cache")
			return serveBytes(c, f.body)
		})
	}
	servePage(e, document{source: repoDir + "/ops/runbook.md", path: RunbookPath, md: ops.RunbookMD}, OpsPath+"/runbook.md")
	servePage(e, document{source: repoDir + "/ops/index.md", path: OpsPath + "/", md: []byte(opsIndex)}, "")
	e.Match(methods, OpsPath, func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, "ops/")
	})
}
