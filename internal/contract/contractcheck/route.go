package contractcheck

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// router matches a request to the contract's operation the way the service's
// router does: segment by segment, a literal segment preferred to a parameter at
// the first place they differ. The contract's paths can overlap (GET
// /transactions/reference/cancel fits /transactions/reference/{merchant_reference}
// and /transactions/{id}/cancel); OpenAPI leaves such a match to the tooling, and
// a checker that picked the other path would judge the answer against the wrong
// operation.
type router struct {
	spec  *openapi3.T
	paths []template
}

// template is one of the contract's paths, split into segments.
type template struct {
	path     string
	item     *openapi3.PathItem
	segments []string
}

func newRouter(spec *openapi3.T) *router {
	r := &router{spec: spec}
	for path, item := range spec.Paths.Map() {
		r.paths = append(r.paths, template{path: path, item: item, segments: strings.Split(strings.Trim(path, "/"), "/")})
	}
	return r
}

// FindRoute returns the operation req is for and its path parameters (unescaped
// once); a RouteError when no path fits (routers.ErrPathNotFound) or the best
// fitting path has no operation for the method (routers.ErrMethodNotAllowed).
func (r *router) FindRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	sent := strings.Split(strings.Trim(req.URL.EscapedPath(), "/"), "/")
	var best *template
	var bestParams map[string]string
	for i := range r.paths {
		t := &r.paths[i]
		params, ok := t.match(sent)
		if ok && (best == nil || t.preferredTo(best)) {
			best, bestParams = t, params
		}
	}
	if best == nil {
		return nil, nil, &routers.RouteError{Reason: routers.ErrPathNotFound.Error()}
	}
	op := best.item.GetOperation(req.Method)
	if op == nil {
		return nil, nil, &routers.RouteError{Reason: routers.ErrMethodNotAllowed.Error()}
	}
	return &routers.Route{Spec: r.spec, Path: best.path, PathItem: best.item, Method: req.Method, Operation: op}, bestParams, nil
}

// match reports whether the sent segments fit t, with t's parameters.
func (t *template) match(sent []string) (map[string]string, bool) {
	if len(sent) != len(t.segments) {
		return nil, false
	}
	params := map[string]string{}
	for i, seg := range t.segments {
		if name, ok := paramName(seg); ok {
			if sent[i] == "" {
				return nil, false
			}
			v, err := url.PathUnescape(sent[i])
			if err != nil {
				return nil, false
			}
			params[name] = v
			continue
		}
		if seg != sent[i] {
			return nil, false
		}
	}
	return params, true
}

// preferredTo reports whether t wins over o: a literal where o has a parameter,
// at the first segment where they differ in kind.
func (t *template) preferredTo(o *template) bool {
	for i := range t.segments {
		_, tp := paramName(t.segments[i])
		_, op := paramName(o.segments[i])
		if tp != op {
			return op
		}
	}
	return false
}

// paramName returns the parameter a segment such as "{id}" names.
func paramName(seg string) (string, bool) {
	if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
		return seg[1 : len(seg)-1], true
	}
	return "", false
}
