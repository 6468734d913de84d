package docs

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// The operator API's reference: its own page and contract beside the partner
// API's. The page sits at the root like PagePath, so its relative script URL
// ("docs/…") resolves to the one embedded Redoc bundle.
const (
	OperatorPagePath = "/operator-docs"
	OperatorSpecPath = "/operator.yaml"
)

// RegisterOperator adds the operator API's page and contract (specYAML) to e, for
// GET and HEAD. Like the partner reference they need no key: the contract holds no
// secret, and every operation it describes needs an operator key.
func RegisterOperator(e *echo.Echo, specYAML []byte) {
	d := New(specYAML)
	tmpl := strings.ReplaceAll(pageTemplate, SpecPath, OperatorSpecPath)
	tmpl = strings.Replace(tmpl, "<title>partnerd API reference</title>", "<title>partnerd operator API reference</title>", 1)
	d.page = fmt.Appendf(nil, tmpl, strings.Trim(d.scriptETag, `"`), guideLinks())
	methods := []string{http.MethodGet, http.MethodHead}
	e.Match(methods, OperatorPagePath, d.servePage)
	e.Match(methods, OperatorSpecPath, d.serveSpec)
}
