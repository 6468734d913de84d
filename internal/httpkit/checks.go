package httpkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/textrule"
)

// textProblem returns why s breaks the contract's string rule, or "" when it keeps
// it. The rule (stated once in the spec's introduction, textrule holds it) is for
// every string a partner sends: valid UTF-8, no control characters (U+0000–U+001F,
// U+007F–U+009F) nor format controls (bidirectional overrides such as U+202E,
// which make a page read text reversed), and no U+FFFD, which only ever stands
// for bytes that were not text. PostgreSQL refuses NUL and invalid UTF-8 while
// SQLite stores them, so without this rule the two databases would disagree, and
// a partner's reference could be stored as something other than what they sent.
func textProblem(s string) string { return textrule.Problem(s) }

// CheckRequest enforces, on every request of an operation of ct before anything
// reaches a database, the string rule and the strict parsing rules:
//
//   - the string rule (textProblem) on path parameters, query parameter names and
//     values, the headers the operation reads (its declared header parameters and
//     the API key header) and every string of a JSON body, property names included;
//     body bytes are checked raw, before JSON decoding would replace invalid UTF-8
//     with U+FFFD;
//   - each query parameter given once, and only the parameters the operation
//     declares (a misspelt filter must not silently widen a list);
//   - a body holds one JSON value and nothing after it.
//
// A violation is 400 invalid_request naming the field. The rules come from the
// contract, so an operation added to a spec gets them with no code of its own.
func CheckRequest(ct Contract) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			op := ct.of(c)
			var details []apperr.Detail
			bad := func(field, msg string) { details = append(details, apperr.Detail{Field: field, Message: msg}) }
			for i, name := range c.ParamNames() {
				v := c.ParamValues()[i]
				// Routing sees the escaped path (RouteOnEscapedPath) and the generated
				// binder unescapes once: check what it will see.
				if u, err := url.PathUnescape(v); err == nil {
					v = u
				}
				if p := textProblem(v); p != "" {
					bad(name, p)
				}
			}
			query := c.QueryParams()
			names := make([]string, 0, len(query))
			for name := range query {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				vs := query[name]
				if p := textProblem(name); p != "" {
					bad("query", "parameter names "+p)
					continue
				}
				if op != nil && !op.query[name] {
					bad(name, "is not a parameter of this operation (check its spelling)")
					continue
				}
				if len(vs) > 1 {
					bad(name, "must be given once (it was given "+strconv.Itoa(len(vs))+" times)")
				}
				for _, v := range vs {
					if p := textProblem(v); p != "" {
						bad(name, p)
						break
					}
				}
			}
			headers := []string{"Idempotency-Key"}
			if op != nil {
				headers = op.headers
			}
			for _, h := range headers {
				vs := c.Request().Header.Values(h)
				if len(vs) > 1 {
					bad(h, "must be sent once")
				}
				for _, v := range vs {
					if p := textProblem(v); p != "" {
						bad(h, p)
						break
					}
				}
			}
			r := c.Request()
			if r.Body != nil && r.Body != http.NoBody && !BodyIgnored(c) {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					var he *echo.HTTPError
					if errors.As(err, &he) {
						return he // the body limit's 413
					}
					return apperr.New(apperr.InvalidRequest, "The request body could not be read.")
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				// The one decode of the body (see body.go); its canonical form is
				// kept for an operation that takes a key and was sent one.
				keyed := op != nil && op.idempotency != nil && r.Header.Get("Idempotency-Key") != ""
				d, field, p := decodeBody(body, keyed)
				c.Set(decodedKey, d)
				if p != "" {
					bad(field, p)
				}
			}
			if len(details) > 0 {
				return &apperr.Error{Code: apperr.InvalidRequest, Message: "The request is invalid.", Details: details}
			}
			return next(c)
		}
	}
}

// jsonTextProblem walks a JSON document's tokens and returns the JSON pointer and
// problem of the first string (key or value) that breaks the string rule. Each
// string's raw bytes are checked as well as its decoded value, since decoding
// turns invalid UTF-8 into U+FFFD. Malformed JSON is left to the validator ("").
func jsonTextProblem(body []byte) (string, string) {
	type frame struct {
		object    bool
		key       string
		index     int
		expectKey bool
	}
	var stack []*frame
	pointer := func(extra ...string) string {
		var b strings.Builder
		for _, f := range stack {
			b.WriteByte('/')
			if f.object {
				b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(f.key))
			} else {
				b.WriteString(strconv.Itoa(f.index))
			}
		}
		for _, e := range extra {
			b.WriteString("/" + e)
		}
		if b.Len() == 0 {
			return "/"
		}
		return b.String()
	}
	advance := func() {
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.object {
			top.expectKey = true
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "" // io.EOF, or malformed JSON the validator reports
		}
		off := dec.InputOffset()
		raw := body[prev:off]
		prev = off
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{object: true, expectKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				advance()
			}
			continue
		case string:
			problem := ""
			if !utf8.Valid(raw) {
				problem = "must be valid UTF-8"
			} else {
				problem = textProblem(v)
			}
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				if problem != "" {
					return pointer(), "property names " + problem
				}
				stack[n-1].key, stack[n-1].expectKey = v, false
				continue
			}
			if problem != "" {
				return pointer(), problem
			}
		}
		advance()
	}
}
