// Package contractcheck checks HTTP answers against the service's contracts
// (openapi/partner.yaml and openapi/operator.yaml, as served): the
// status must be declared for the operation, and the headers and body must match
// it. The component tests (internal/testsupport/apitest) and the conformance check a QA team
// runs against a deployment (internal/contract/conformance) use the same checker, so both
// hold a server to one reading of the contract.
package contractcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"partnerd/internal/httpapi"
	"partnerd/internal/operatorapi"
	"partnerd/openapi"
)

// Checker checks exchanges against one contract, rebased on its API's base path.
type Checker struct {
	// Name names the contract in messages, e.g. "the partner contract".
	Name  string
	spec  *openapi3.T
	route routers.Router
}

// Reading is how strictly response bodies are read.
type Reading int

const (
	// AsDeclared reads the contract as written: an object without
	// additionalProperties accepts properties it does not declare (the contract's
	// promise to clients: fields may be added without a new major version).
	AsDeclared Reading = iota
	// Closed also refuses a property a response object does not declare (unless
	// the object declares additionalProperties itself): a deployment checked
	// against the contract of its own version must answer nothing it does not
	// document. See Close.
	Closed
)

// Partner returns a checker of the partner API's contract (paths under
// httpapi.BasePath). The contract is parsed once per process and reading: a
// Checker is read-only, so every test service of a run shares it.
func Partner(r Reading) (*Checker, error) {
	if r == Closed {
		return partnerClosed()
	}
	return partnerDeclared()
}

// Operator returns a checker of the operator API's contract (paths under
// operatorapi.BasePath), parsed once per process and reading as Partner's.
func Operator(r Reading) (*Checker, error) {
	if r == Closed {
		return operatorClosed()
	}
	return operatorDeclared()
}

var (
	partnerDeclared = sync.OnceValues(func() (*Checker, error) {
		return build("the partner contract", openapi.PartnerYAML, httpapi.BasePath, AsDeclared)
	})
	partnerClosed = sync.OnceValues(func() (*Checker, error) {
		return build("the partner contract", openapi.PartnerYAML, httpapi.BasePath, Closed)
	})
	operatorDeclared = sync.OnceValues(func() (*Checker, error) {
		return build("the operator contract", openapi.OperatorYAML, operatorapi.BasePath, AsDeclared)
	})
	operatorClosed = sync.OnceValues(func() (*Checker, error) {
		return build("the operator contract", openapi.OperatorYAML, operatorapi.BasePath, Closed)
	})
)

// build parses a contract as served, rebased on base, read as r.
func build(name string, yaml []byte, base string, r Reading) (*Checker, error) {
	spec, err := load(yaml, base)
	if err != nil {
		return nil, err
	}
	if r == Closed {
		Close(spec)
	}
	return New(name, spec)
}

// New returns a checker of spec, whose paths must already carry the API's base
// path and whose servers are cleared (httpkit.Rebase).
func New(name string, spec *openapi3.T) (*Checker, error) {
	return &Checker{Name: name, spec: spec, route: newRouter(spec)}, nil
}

// Spec returns the contract the checker reads.
func (c *Checker) Spec() *openapi3.T { return c.spec }

// Operations returns the operationId of every operation of the contract, sorted.
func (c *Checker) Operations() []string {
	var ids []string
	for _, item := range c.spec.Paths.Map() {
		for _, op := range item.Operations() {
			ids = append(ids, operationID(op))
		}
	}
	slices.Sort(ids)
	return ids
}

// OperationOf returns the id of the operation at method and path (as the
// contract's paths are keyed, base path included), or "".
func (c *Checker) OperationOf(method, path string) string {
	item := c.spec.Paths.Value(path)
	if item == nil || item.GetOperation(method) == nil {
		return ""
	}
	return operationID(item.GetOperation(method))
}

// Operation returns the operationId of the contract's operation req is for, or ""
// when it matches none.
func (c *Checker) Operation(req *http.Request) string {
	route, _, err := c.route.FindRoute(req)
	if err != nil {
		return ""
	}
	return operationID(route.Operation)
}

// operationID returns op's id as the contract's file spells it: the spec
// embedded by oapi-codegen carries ids with their first letter upper-cased
// (createQuote becomes CreateQuote), and the contracts' ids all start lower-case.
func operationID(op *openapi3.Operation) string {
	id := op.OperationID
	if id == "" {
		return ""
	}
	return strings.ToLower(id[:1]) + id[1:]
}

// Check checks one exchange (reqBody and body are the bodies already read): every
// response carries X-Request-Id; any failure body is the Error schema; a response
// to an operation of the contract must have a declared status and match its
// headers and body; a request matching no operation must have been answered 404 or
// 405. It returns the operation's id ("" when none matched) and the violation.
func (c *Checker) Check(req *http.Request, reqBody []byte, resp *http.Response, body []byte) (string, error) {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	// HEAD is answered as GET without a body: judged as the GET, body aside.
	head := r.Method == http.MethodHead
	if head {
		r.Method = http.MethodGet
	}
	route, params, routeErr := c.route.FindRoute(r)
	opID := ""
	if routeErr == nil {
		opID = operationID(route.Operation)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		return opID, errors.New("no X-Request-Id header")
	}
	if head && len(body) > 0 {
		return opID, errors.New("an answer to HEAD has a body")
	}
	if resp.StatusCode >= 400 && !head {
		if err := c.ValidateSchema("Error", body); err != nil {
			return opID, fmt.Errorf("error body: %w", err)
		}
	}
	if routeErr != nil {
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			return "", errors.New("a request matching no operation must get 404 or 405")
		}
		return "", nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: r, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: head},
	}
	in.SetBodyBytes(body)
	return opID, openapi3filter.ValidateResponse(context.Background(), in)
}

// ValidateSchema checks body against the named component schema of the contract.
func (c *Checker) ValidateSchema(name string, body []byte) error {
	ref := c.spec.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return errors.New("no schema " + name)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return err
	}
	return ref.Value.VisitJSON(v, openapi3.MultiErrors())
}

// Exchange is one checked request and its answer.
type Exchange struct {
	// Operation is the contract's operationId ("" when the request matched none).
	Operation string
	Request   *http.Request
	Response  *http.Response
	// Body is the response body as received.
	Body []byte
	// Err is the violation of the contract, nil when the answer conforms.
	Err error
}

// Transport is an http.RoundTripper that checks every answer against the
// contract and hands each exchange to Observe; the response is returned unchanged
// (its body re-readable), so the caller's client decodes it as usual.
type Transport struct {
	Checker *Checker
	// Next sends the request (http.DefaultTransport when nil).
	Next    http.RoundTripper
	Observe func(Exchange)
}

// RoundTrip sends req and checks the answer.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req.Body = http.NoBody
		if len(b) > 0 {
			req.Body = io.NopCloser(bytes.NewReader(b))
		}
	}
	next := t.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	op, verr := t.Checker.Check(req, reqBody, resp, body)
	t.Observe(Exchange{Operation: op, Request: req, Response: resp, Body: body, Err: verr})
	return resp, nil
}

// Describe breaks a violation Check returned into short lines a person reads:
// one per failed rule, each with where it failed (the body's JSON pointer) and
// the value answered, without the schema dump kin-openapi's messages carry.
func Describe(err error) []string {
	if err == nil {
		return nil
	}
	var multi openapi3.MultiError
	if errors.As(err, &multi) && len(multi) > 0 && !isSchemaError(err) {
		var out []string
		for _, e := range multi {
			out = append(out, Describe(e)...)
		}
		return out
	}
	var resp *openapi3filter.ResponseError
	if errors.As(err, &resp) && resp.Err != nil {
		where := resp.Reason
		if strings.HasPrefix(where, "response body doesn't match") {
			where = "body"
		}
		var out []string
		for _, line := range Describe(resp.Err) {
			out = append(out, strings.TrimSpace(where+" "+line))
		}
		return out
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		got, _ := json.Marshal(se.Value)
		if len(got) > 120 {
			got = append(got[:120], "…"...)
		}
		return []string{fmt.Sprintf("/%s: %s (answered %s)", strings.Join(se.JSONPointer(), "/"), se.Reason, got)}
	}
	return []string{err.Error()}
}

// isSchemaError reports whether err itself (not something it holds) is a
// schema error.
func isSchemaError(err error) bool {
	_, ok := err.(*openapi3.SchemaError)
	return ok
}
