package httpkit

import (
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// Rebase makes spec's paths carry base (as the router sees them) and drops its
// servers, so requests validate against it whatever host they came to. It also
// makes the validator check the "uuid" format, which kin-openapi leaves unchecked
// by default: without it a malformed id would reach the generated binder instead
// of getting a validation error.
func Rebase(spec *openapi3.T, base string) *openapi3.T {
	uuidFormat.Do(func() {
		openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(uuidPattern))
	})
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
