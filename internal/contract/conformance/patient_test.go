package conformance

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A 429 is waited out (Retry-After) and the request resent with its body; a
// wait longer than allowed is handed back as it is.
func TestPatientWaitsOutRateLimits(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", r.URL.Query().Get("wait"))
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	c := &http.Client{Transport: &patient{next: http.DefaultTransport, tries: 3, maxWait: 2 * time.Second}}

	start := time.Now()
	resp, err := c.Post(srv.URL+"?wait=1", "application/json", strings.NewReader(`{"a":1}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `{"a":1}`, string(body), "resent with its body")
	require.GreaterOrEqual(t, time.Since(start), time.Second)

	calls.Store(0)
	resp, err = c.Post(srv.URL+"?wait=60", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a wait over the limit is not waited")
	require.EqualValues(t, 1, calls.Load())
}
