package contractcheck

import (
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
)

// Close changes spec in place so that every object schema that declares
// properties but not additionalProperties refuses undeclared ones. An allOf of
// objects (a schema extending another) is first flattened into one object with
// every branch's properties and required names, since closing each branch would
// refuse the other branches' properties. Schemas that declare additionalProperties
// (true, false or a schema) keep what they declare.
func Close(spec *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	for _, ref := range spec.Components.Schemas {
		closeSchema(ref, seen)
	}
	for _, ref := range spec.Components.Responses {
		if ref.Value != nil {
			for _, mt := range ref.Value.Content {
				closeSchema(mt.Schema, seen)
			}
		}
	}
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			for _, resp := range op.Responses.Map() {
				if resp.Value == nil {
					continue
				}
				for _, mt := range resp.Value.Content {
					closeSchema(mt.Schema, seen)
				}
			}
		}
	}
}

func closeSchema(ref *openapi3.SchemaRef, seen map[*openapi3.Schema]bool) {
	if ref == nil || ref.Value == nil || seen[ref.Value] {
		return
	}
	s := ref.Value
	seen[s] = true
	if objectBranches(s.AllOf) {
		flatten(s)
	}
	if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
		no := false
		s.AdditionalProperties.Has = &no
	}
	for _, p := range s.Properties {
		closeSchema(p, seen)
	}
	closeSchema(s.Items, seen)
	closeSchema(s.AdditionalProperties.Schema, seen)
	for _, group := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
		for _, b := range group {
			closeSchema(b, seen)
		}
	}
}

// objectBranches reports whether an allOf composes objects (rather than adding a
// description to a scalar, as the contracts do for amounts).
func objectBranches(branches openapi3.SchemaRefs) bool {
	for _, b := range branches {
		if b.Value != nil && (len(b.Value.Properties) > 0 || objectBranches(b.Value.AllOf)) {
			return true
		}
	}
	return false
}

// flatten replaces s's allOf by the union of its branches' properties and
// required names (branches that are themselves allOfs included). The branch
// schemas are left as they are: they are read on their own elsewhere.
func flatten(s *openapi3.Schema) {
	props := openapi3.Schemas{}
	for name, p := range s.Properties {
		props[name] = p
	}
	required := slices.Clone(s.Required)
	var add func(openapi3.SchemaRefs)
	add = func(branches openapi3.SchemaRefs) {
		for _, b := range branches {
			if b.Value == nil {
				continue
			}
			add(b.Value.AllOf)
			for name, p := range b.Value.Properties {
				props[name] = p
			}
			for _, r := range b.Value.Required {
				if !slices.Contains(required, r) {
					required = append(required, r)
				}
			}
		}
	}
	add(s.AllOf)
	s.AllOf = nil
	s.Type = &openapi3.Types{openapi3.TypeObject}
	s.Properties = props
	s.Required = required
}
