package webkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
)

// InProcess is an http.RoundTripper serving each request with the service's own
// handler, without a socket: the sites are clients of the APIs (the console of
// the operator API, the dashboard of the partner API), so every read and action
// runs the same validation, idempotency, audit and limits as over the network.
// Prepare, when set, may return the request with what the handler must know of
// the caller in its context (the dashboard's signed-in user).
type InProcess struct {
	Handler func() http.Handler
	Prepare func(r *http.Request) *http.Request
}

// RoundTrip serves r and returns the recorded answer.
func (t InProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.Prepare != nil {
		r = t.Prepare(r)
	}
	rec := httptest.NewRecorder()
	if r.Body == nil {
		r.Body = http.NoBody
	}
	r.RemoteAddr = "127.0.0.1:0"
	r.RequestURI = r.URL.RequestURI()
	t.Handler().ServeHTTP(rec, r)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}

// Client is an HTTP client whose requests the service's own handler serves in
// process (InProcess), each prepared by prepare (nil: as they are): what a
// site hands its generated API client.
func Client(handler func() http.Handler, prepare func(r *http.Request) *http.Request) *http.Client {
	return &http.Client{Transport: InProcess{Handler: handler, Prepare: prepare}}
}

// Answer is what every generated API response has.
type Answer interface {
	StatusCode() int
	GetBody() []byte
}

// StatusOf is the status of res, or 502 when the call itself failed.
func StatusOf(res Answer, err error) int {
	if err != nil || isNil(res) {
		return http.StatusBadGateway
	}
	return res.StatusCode()
}

// BodyOf is the body of a generated response, or nil (no response: the call
// itself failed).
func BodyOf(res Answer) []byte {
	if isNil(res) {
		return nil
	}
	return res.GetBody()
}

func isNil(res Answer) bool { return res == nil || reflect.ValueOf(res).IsNil() }

// Problem is a refusal as a person reads it: Words first, the machine's Detail
// (an error code, a status, a raw error) folded beneath them.
type Problem struct {
	Words, Detail string
}

// String is the problem's words and, in brackets, its detail.
func (p Problem) String() string {
	if p.Detail == "" {
		return p.Words
	}
	return p.Words + " (" + p.Detail + ")"
}

// APIError is an API failure (both APIs answer in the same error body) in
// words: the message and each field's hint; the code and status are its detail.
func APIError(status int, body []byte) Problem {
	var e struct {
		Message string `json:"message"`
		Error   struct {
			Code    string `json:"code"`
			Details []struct {
				Field   string `json:"field"`
				Message string `json:"message"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		return Problem{Words: "The service could not do this now; try again in a moment.", Detail: fmt.Sprintf("HTTP %d", status)}
	}
	msg := e.Message
	for _, d := range e.Error.Details {
		msg += " (" + d.Field + ": " + d.Message + ")"
	}
	return Problem{Words: msg, Detail: fmt.Sprintf("%s, HTTP %d", e.Error.Code, status)}
}
