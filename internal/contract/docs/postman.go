package docs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/labstack/echo/v4"

	"partnerd/openapi/postman"
)

// The Postman collections generated from the contracts (make postman) and the
// sandbox environment, served as committed so a partner or a QA team imports them
// straight from a deployment. Each path is under PagePath, so the page links to it
// relatively like the script.
const (
	// PostmanPartnerPath is the partner API's collection.
	PostmanPartnerPath = PagePath + "/postman/partner.json"
	// PostmanOperatorPath is the operator API's collection.
	PostmanOperatorPath = PagePath + "/postman/operator.json"
	// PostmanEnvironmentPath sets both collections' base URLs to a local make run,
	// with placeholders for the keys.
	PostmanEnvironmentPath = PagePath + "/postman/sandbox-environment.json"
)

// postmanFiles maps each path to its file and the name a browser saves it under.
var postmanFiles = []struct {
	path, filename string
	body           []byte
}{
	{PostmanPartnerPath, "partnerd-partner.postman_collection.json", postman.Partner},
	{PostmanOperatorPath, "partnerd-operator.postman_collection.json", postman.Operator},
	{PostmanEnvironmentPath, "partnerd-sandbox.postman_environment.json", postman.SandboxEnvironment},
}

// registerPostman serves the collections and the environment for GET and HEAD,
// without a key: they hold no secret (the environment has placeholders, not keys).
func registerPostman(e *echo.Echo) {
	for _, f := range postmanFiles {
		body := bytes.Clone(f.body)
		sum := sha256.Sum256(body)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		disposition := `attachment; filename="` + f.filename + `"`
		e.Match([]string{http.MethodGet, http.MethodHead}, f.path, func(c echo.Context) error {
			h := c.Response().Header()
			h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
			h.Set(echo.HeaderContentDisposition, disposition)
			h.Set("X-Content-Type-Options", "nosniff")
			// They change with deployments: revalidate by ETag.
			h.Set("Cache-Control", "no-cache")
			h.Set("ETag", etag)
			return serveBytes(c, body)
		})
	}
}
