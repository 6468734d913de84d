package httpkit

import (
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/routers"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// Contract is what the request checks (CheckRequest) need to know of an API's
// operations, read from its spec once at start, so every operation the spec
// declares gets the same rules without being listed anywhere else. Keys are
// "METHOD route" with the route as Echo registers it ("/api/v1/partner/transactions/:id").
type Contract map[string]*operation

// operation is one operation of a contract.
type operation struct {
	id string
	// query holds the declared query parameter names; any other is refused.
	query map[string]bool
	// headers are the header parameters it declares and the header of its
	// security scheme: the headers whose values the service reads.
	headers []string
	// idempotency is the operation's Idempotency-Key parameter, nil when it takes none.
	idempotency *openapi3.Parameter
	method      string
	// route is the contract's route of the operation, for validating a request
	// Echo routed to it (never routed a second time: Echo's match is the one).
	route *routers.Route
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// IndexContract indexes spec's operations (its paths carrying their base path, as
// Rebase leaves them) by method and Echo route.
func IndexContract(spec *openapi3.T) Contract {
	var security []string
	if spec.Components != nil {
		for _, s := range spec.Components.SecuritySchemes {
			if s.Value != nil && s.Value.Type == "apiKey" && s.Value.In == "header" {
				security = append(security, http.CanonicalHeaderKey(s.Value.Name))
			}
		}
	}
	out := Contract{}
	for path, item := range spec.Paths.Map() {
		route := pathParam.ReplaceAllString(path, ":$1")
		for method, op := range item.Operations() {
			o := &operation{id: operationID(op.OperationID), query: map[string]bool{}, method: method,
				route: &routers.Route{Spec: spec, Path: path, PathItem: item, Method: method, Operation: op}}
			headers := map[string]bool{}
			for _, h := range security {
				headers[h] = true
			}
			for _, ref := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
				p := ref.Value
				if p == nil {
					continue
				}
				switch p.In {
				case openapi3.ParameterInQuery:
					o.query[p.Name] = true
				case openapi3.ParameterInHeader:
					headers[http.CanonicalHeaderKey(p.Name)] = true
					if strings.EqualFold(p.Name, "Idempotency-Key") {
						o.idempotency = p
					}
				}
			}
			for h := range headers {
				o.headers = append(o.headers, h)
			}
			sort.Strings(o.headers)
			out[method+" "+route] = o
		}
	}
	return out
}

// of returns the operation c's request was routed to, nil for none.
func (ct Contract) of(c echo.Context) *operation {
	return ct[c.Request().Method+" "+c.Path()]
}

// Operations lists the ids of the contract's operations.
func (ct Contract) operations() []*operation {
	out := make([]*operation, 0, len(ct))
	for _, o := range ct {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// changesState reports whether the operation's method changes state: every such
// operation accepts an Idempotency-Key (a test holds both contracts to it).
func (o *operation) changesState() bool {
	return o.method != http.MethodGet && o.method != http.MethodHead
}

// OperationID is operationID for the operator API's access rules, keyed like
// its routes.
func OperationID(id string) string { return operationID(id) }

// operationID returns id as the spec writes it: the embedded spec of the
// generated code capitalises operation ids ("FillOrder"), while the generated
// registration and the stored idempotency keys use the spec's "fillOrder".
func operationID(id string) string {
	if id == "" {
		return id
	}
	return strings.ToLower(id[:1]) + id[1:]
}
