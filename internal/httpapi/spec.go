package httpapi

import (
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"partnerd/gen/api"
)

// BasePath is where the partner API is mounted; the spec's servers end in it.
const BasePath = "/api/v1/partner"

// Spec returns the embedded contract rewritten for routing requests as this server
// receives them: every path carries BasePath and the servers are dropped, so the
// validator matches on the path alone (never on the Host header). Tests use the same
// document to validate responses.
func Spec() (*openapi3.T, error) {
	uuidFormat.Do(func() {
		// kin-openapi leaves "uuid" unchecked by default; without this a malformed id
		// would reach the generated binder instead of getting a validation error.
		openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(uuidPattern))
	})
	spec, err := api.GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	return Rebase(spec, BasePath), nil
}

// Rebase makes spec's paths carry base (as the router sees them) and drops its
// servers, so requests validate against it whatever host they came to.
func Rebase(spec *openapi3.T, base string) *openapi3.T {
	spec.Servers = nil
	paths := openapi3.NewPaths()
	for path, item := range spec.Paths.Map() {
		paths.Set(base+path, item)
	}
	spec.Paths = paths
	return spec
}

const uuidPattern = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`

var uuidFormat sync.Once
