package contractcheck

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"

	"partnerd/internal/httpkit"
)

// extensibleEnum is the vendor extension that declares an open enum: a list that
// may grow in a minor version, so generated clients keep it open.
const extensibleEnum = "x-extensible-enum"

// load parses a contract as it is served (openapi.PartnerYAML or
// openapi.OperatorYAML, byte for byte), rebased onto base, for checking answers.
//
// It is the published contract, not the servers' embedded copy: the servers are
// generated through openapi/server.overlay.yaml, which drops the headers the
// transport layer writes (X-Request-Id, the RateLimit fields), and those must be
// checked too.
//
// Every open enum (x-extensible-enum) is closed to the values it lists: partners
// must accept values not listed yet, but the service must never send one, so an
// action or state the code emits before the contract names it fails the test (or
// the conformance run) that provoked it, exactly like a value outside a closed enum.
func load(yaml []byte, base string) (*openapi3.T, error) {
	spec, err := openapi3.NewLoader().LoadFromData(yaml)
	if err != nil {
		return nil, fmt.Errorf("load the contract: %w", err)
	}
	spec = httpkit.Rebase(spec, base)
	closeOpenEnums(spec)
	return spec, nil
}

// closeOpenEnums sets the enum of every schema in spec that declares
// x-extensible-enum to the listed values, and returns how many it closed.
func closeOpenEnums(spec *openapi3.T) int {
	n := 0
	walkSchemas(spec, func(s *openapi3.Schema) {
		list, ok := s.Extensions[extensibleEnum].([]any)
		if !ok || len(s.Enum) > 0 {
			return
		}
		s.Enum = append([]any(nil), list...)
		n++
	})
	return n
}

// walkSchemas calls fn once for every schema reachable from spec: components,
// and the parameters, bodies and responses of every operation, with their
// properties, items and compositions.
func walkSchemas(spec *openapi3.T, fn func(*openapi3.Schema)) {
	seen := map[*openapi3.Schema]bool{}
	var visit func(ref *openapi3.SchemaRef)
	visit = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		fn(s)
		for _, p := range s.Properties {
			visit(p)
		}
		visit(s.Items)
		visit(s.Not)
		if s.AdditionalProperties.Schema != nil {
			visit(s.AdditionalProperties.Schema)
		}
		for _, list := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
			for _, r := range list {
				visit(r)
			}
		}
	}
	content := func(c openapi3.Content) {
		for _, mt := range c {
			visit(mt.Schema)
		}
	}
	headers := func(h openapi3.Headers) {
		for _, ref := range h {
			if ref.Value != nil {
				visit(ref.Value.Schema)
			}
		}
	}
	responses := func(rs map[string]*openapi3.ResponseRef) {
		for _, r := range rs {
			if r.Value != nil {
				content(r.Value.Content)
				headers(r.Value.Headers)
			}
		}
	}
	params := func(ps openapi3.Parameters) {
		for _, p := range ps {
			if p.Value != nil {
				visit(p.Value.Schema)
				content(p.Value.Content)
			}
		}
	}
	if c := spec.Components; c != nil {
		for _, s := range c.Schemas {
			visit(s)
		}
		responses(c.Responses)
		headers(c.Headers)
		for _, p := range c.Parameters {
			params(openapi3.Parameters{p})
		}
		for _, b := range c.RequestBodies {
			if b.Value != nil {
				content(b.Value.Content)
			}
		}
	}
	for _, item := range spec.Paths.Map() {
		params(item.Parameters)
		for _, op := range item.Operations() {
			params(op.Parameters)
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				content(op.RequestBody.Value.Content)
			}
			if op.Responses != nil {
				responses(op.Responses.Map())
			}
		}
	}
}
