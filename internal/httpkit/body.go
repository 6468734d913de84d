package httpkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

// A request body is read from the connection once and decoded once (CheckRequest):
// the string rule and the trailing-data rule look at that decoded value, the
// idempotency fingerprint is its canonical JSON, the validator checks it against the
// contract (validateBody, instead of kin-openapi decoding the body again), and the
// generated strict handler binds it into the operation's input through the body's
// ValidatedValue (oapi-codegen's runtime.BindJSONValue maps the decoded value
// onto the struct; it does not parse JSON text). Only a request already refused
// is parsed again, to name the first offending field exactly as before.

// decodedKey holds, in the echo context, the request body as CheckRequest read and
// decoded it.
const decodedKey = "partnerd.body"

// decodedBody is a request body as read and decoded once.
type decodedBody struct {
	raw []byte
	// value is the decoded JSON (json.Number for numbers), nil when err is set.
	value any
	// err is why raw is not one JSON value (empty, malformed): the validator
	// reports it as the contract's parse error.
	err error
	// canon is value's canonical JSON (keys sorted, no insignificant space),
	// taken before validation fills defaults in: what the fingerprint hashes.
	canon []byte
}

// decodeJSON decodes body, one JSON value, and reports whether anything but white
// space follows it. It is the one decode of a request body (a variable so a test
// can count its calls).
var decodeJSON = func(body []byte) (value any, trailing bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&value); err != nil {
		return nil, false, err
	}
	_, err = dec.Token()
	return value, err != io.EOF, nil
}

// decodeBody decodes body and returns it with the field and problem of the first
// string that breaks the string rule, or of data after the value ("" when none).
func decodeBody(body []byte, canonical bool) (*decodedBody, string, string) {
	d := &decodedBody{raw: body}
	v, trailing, err := decodeJSON(body)
	switch {
	case err != nil:
		d.err = err
		// Malformed JSON is the validator's to report, unless a string before the
		// syntax error breaks the rule (the walk stops at the error).
		field, p := jsonTextProblem(body)
		return d, field, p
	case trailing || !utf8.Valid(body) || treeTextProblem(v):
		// Refused: walk the text for the first offending field, in document order.
		if field, p := jsonTextProblem(body); p != "" {
			return d, field, p
		}
		if trailing {
			return d, "body", "must be one JSON value with nothing after it"
		}
		return d, "body", "must be valid UTF-8"
	}
	d.value = v
	if canonical {
		if d.canon, err = json.Marshal(v); err != nil {
			d.canon = nil // hashed as sent
		}
	}
	return d, "", ""
}

// treeTextProblem reports whether a string of v, property names included, breaks
// the string rule.
func treeTextProblem(v any) bool {
	switch v := v.(type) {
	case string:
		return textProblem(v) != ""
	case map[string]any:
		for k, e := range v {
			if textProblem(k) != "" || treeTextProblem(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if treeTextProblem(e) {
				return true
			}
		}
	}
	return false
}

// validateBody checks the body CheckRequest decoded against the operation's request
// body as kin-openapi's ValidateRequestBody does (the same options: as a request,
// defaults filled in, every error), but on that decoded value, and hands the
// validated value on to the strict handler's binder (validatedBody).
func validateBody(c echo.Context, input *openapi3filter.RequestValidationInput, rb *openapi3.RequestBody) error {
	req := c.Request()
	d, _ := c.Get(decodedKey).(*decodedBody)
	if d == nil {
		d = &decodedBody{}
	}
	if len(d.raw) == 0 {
		if rb.Required {
			return &openapi3filter.RequestError{Input: input, RequestBody: rb, Err: openapi3filter.ErrInvalidRequired}
		}
		return nil
	}
	if len(rb.Content) == 0 {
		return nil
	}
	mime := req.Header.Get(echo.HeaderContentType)
	ct := rb.Content.Get(mime)
	if ct == nil {
		return &openapi3filter.RequestError{Input: input, RequestBody: rb,
			Reason: fmt.Sprintf("header Content-Type has unexpected value %q", mime)}
	}
	if ct.Schema == nil {
		return nil
	}
	if d.err != nil {
		return &openapi3filter.RequestError{Input: input, RequestBody: rb, Reason: "failed to decode request body",
			Err: &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Cause: d.err}}
	}
	defaults := false
	if err := ct.Schema.Value.VisitJSON(d.value, openapi3.VisitAsRequest(), openapi3.MultiErrors(),
		openapi3.DefaultsSet(func() { defaults = true })); err != nil {
		reason := "doesn't match schema"
		if ct.Schema.Ref != "" {
			reason += " " + ct.Schema.Ref
		}
		return &openapi3filter.RequestError{Input: input, RequestBody: rb, Reason: reason, Err: err}
	}
	raw := d.raw
	if defaults {
		// The binder's fallback (a value it cannot bind) reads the body: let it
		// read what was validated.
		if b, err := json.Marshal(d.value); err == nil {
			raw = b
		}
	}
	req.Body = &validatedBody{Reader: bytes.NewReader(raw), value: d.value}
	req.ContentLength = int64(len(raw))
	req.GetBody = nil
	return nil
}

// validatedBody is a request body validated against the contract: the generated
// strict handler binds its ValidatedValue (oapi-codegen's runtime.BindJSONBody
// convention, which kin-openapi's KeepValidatedValue option also follows) instead
// of decoding the text again; the text stays readable for a binder that cannot.
type validatedBody struct {
	*bytes.Reader
	value any
}

// ValidatedValue is the decoded, validated body.
func (b *validatedBody) ValidatedValue() any { return b.value }

// Read reads the body's text (counted: only a binder falling back reads it).
func (b *validatedBody) Read(p []byte) (int, error) {
	bodyRereads.Add(1)
	return b.Reader.Read(p)
}

// Close does nothing: the connection's body was read and closed by CheckRequest.
func (b *validatedBody) Close() error { return nil }

var _ io.ReadCloser = (*validatedBody)(nil)

// bodyRereads counts reads of validated bodies' text (a test asserts none).
var bodyRereads atomic.Int64
