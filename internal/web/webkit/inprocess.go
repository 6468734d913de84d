package webkit

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
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
