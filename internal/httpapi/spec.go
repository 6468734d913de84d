package httpapi

import (
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"partnerd/gen/api"
	"partnerd/internal/httpkit"
)

// BasePath is where the partner API is mounted; the spec's servers end in it.
const BasePath = "/api/v1/partner"

// Spec returns the embedded contract rewritten for routing requests as this server
// receives them (httpkit.Rebase): every path carries BasePath and the servers are
// dropped, so the validator matches on the path alone (never on the Host header).
// Tests use the same document to validate responses.
func Spec() (*openapi3.T, error) { return spec() }

// spec parses the embedded contract once per process: the document is only read
// after that (routing, validation), so every server built in the process (a test
// run builds hundreds) shares it.
var spec = sync.OnceValues(func() (*openapi3.T, error) {
	s, err := api.GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	return httpkit.Rebase(s, BasePath), nil
})
