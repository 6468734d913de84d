package docs

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"partnerd/internal/contract/docs/ops"
)

// OpsPath is where the operators' files are served: the Prometheus alert rules,
// the runbook they link to and the Grafana dashboard, the very bytes the binary
// was built and tested with, so what an operator loads matches the running
// version's metrics.
const OpsPath = PagePath + "/ops"

// opsFiles are the served files and their types.
var opsFiles = map[string]struct {
	body []byte
	typ  string
}{
	"alerts.yml":     {ops.AlertsYAML, "application/yaml"},
	"runbook.md":     {ops.RunbookMD, "text/markdown; charset=utf-8"},
	"dashboard.json": {ops.DashboardJSON, echo.MIMEApplicationJSON},
}

// RegisterOps serves the operators' files under OpsPath for GET and HEAD,
// without a key (they hold nothing secret).
func RegisterOps(e *echo.Echo) {
	for name, f := range opsFiles {
		e.Match([]string{http.MethodGet, http.MethodHead}, OpsPath+"/"+name, func(c echo.Context) error {
			h := c.Response().Header()
			h.Set(echo.HeaderContentType, f.typ)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-cache")
			return serveBytes(c, f.body)
		})
	}
}
