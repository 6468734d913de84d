package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/httpapi"
	"partnerd/internal/testsupport/apitest"
)

// errorBody decodes an error body.
func errorBody(t *testing.T, body []byte) client.Error {
	t.Helper()
	var e client.Error
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	return e
}

// fieldsOf returns the fields an error's details name.
func fieldsOf(e client.Error) []string {
	out := make([]string, len(e.Error.Details))
	for i, d := range e.Error.Details {
		out[i] = d.Field
	}
	return out
}

// A body with anything after its JSON value is refused before anything runs, and
// an unknown query parameter is named instead of being ignored.
func TestStrictParsing(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		ctx := context.Background()
		key := env.NewPartner(t)
		c := env.Client(t, key)
		hc := env.HTTPClient(t)

		for name, trailer := range map[string]string{"garbage": " garbage", "second document": `{"merchant_reference":"X"}`, "array": "[]"} {
			body := `{"merchant_reference":"TRAIL-1","crypto_currency":"usdt","network":"bep20","fiat_amount":"2000"}` + trailer
			req, err := http.NewRequest(http.MethodPost, env.BaseURL+"/transactions", strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("X-API-KEY", key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", uuid.NewString())
			res, err := hc.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			require.Equal(t, http.StatusBadRequest, res.StatusCode, name)
			e := errorBody(t, b)
			require.Equal(t, client.ErrorCode("invalid_request"), e.Error.Code, name)
			require.Equal(t, []string{"body"}, fieldsOf(e), name)
		}
		// Trailing white space is not data.
		create(t, c, direct("TRAIL-OK", "bep20", "2000"))
		list, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 1, "nothing was created by a refused body")

		misspelt := func(_ context.Context, r *http.Request) error {
			q := r.URL.Query()
			q.Set("stauts", "completed")
			r.URL.RawQuery = q.Encode()
			return nil
		}
		res, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{}, misspelt)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, res.StatusCode(), string(res.Body))
		require.Equal(t, client.ErrorCode("invalid_request"), res.JSON400.Error.Code)
		require.Equal(t, []string{"stauts"}, fieldsOf(*res.JSON400))
		rev, err := c.ListRevenueWithResponse(ctx, &client.ListRevenueParams{}, misspelt)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, rev.StatusCode(), string(rev.Body))

		// The operator API: the same rules from the same layer.
		oc := env.OperatorHTTPClient(t)
		req, err := http.NewRequest(http.MethodGet, env.OperatorURL()+"/deposits/unmatched?stauts=open", nil)
		require.NoError(t, err)
		req.Header.Set("X-API-KEY", env.NewOperator(t))
		ores, err := oc.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(ores.Body)
		_ = ores.Body.Close()
		require.Equal(t, http.StatusBadRequest, ores.StatusCode, string(b))
		require.Equal(t, []string{"stauts"}, fieldsOf(errorBody(t, b)))
	})
}

// A merchant reference holding "/" or a literal "%xx" is found by the path the
// generated client builds (percent-encoded once) and decoded exactly once.
func TestReferencePathDecodedOnce(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		ctx := context.Background()
		c := env.Client(t, env.NewPartner(t))
		u := uuid.NewString()[:8]
		slash := create(t, c, direct("REF/"+u, "bep20", "2000"))
		literal := create(t, c, direct("PCT-%41-"+u, "bep20", "2000"))
		plain := create(t, c, direct("PCT-A-"+u, "bep20", "2000"))
		// "%00" as three characters is text, not a NUL (decoded twice, it would be).
		nul := create(t, c, direct("PCT-%00-"+u, "bep20", "2000"))
		for ref, want := range map[string]uuid.UUID{"REF/" + u: slash.Id, "PCT-%41-" + u: literal.Id, "PCT-A-" + u: plain.Id,
			"pct-%41-" + u: literal.Id, "PCT-%00-" + u: nul.Id} {
			res, err := c.GetTransactionByReferenceWithResponse(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), "%s: %s", ref, res.Body)
			require.Equal(t, want, res.JSON200.Data.Id, ref)
		}
		// Sent raw, "%2F" and "%252F" are different references.
		res, err := c.GetTransactionByReferenceWithResponse(ctx, "REF%2F"+u)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, res.StatusCode(), string(res.Body))
	})
}

// rawExchange sends raw bytes on a fresh connection to the server and reads the answer.
func rawExchange(t *testing.T, root, raw string) (*http.Response, []byte) {
	t.Helper()
	u, err := url.Parse(root)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = conn.Write([]byte(raw))
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, b
}

// Bytes net/http refuses before any handler runs (a raw NUL in the path or a
// header) get the error envelope with a request id, not Go's plain text.
func TestRawControlBytesGetTheEnvelope(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		for name, raw := range map[string]string{
			"NUL in the path":         "GET /api/v1/partner/transactions/a\x00b HTTP/1.1\r\nHost: x\r\nX-API-KEY: " + key + "\r\n\r\n",
			"NUL in a header":         "GET /api/v1/partner/transactions HTTP/1.1\r\nHost: x\r\nX-API-KEY: " + key + "\x00\r\n\r\n",
			"NUL in the operator key": "GET /api/v1/operator/deposits/unmatched HTTP/1.1\r\nHost: x\r\nX-API-KEY: a\x00b\r\n\r\n",
			"escape in a header":      "POST /api/v1/partner/transactions HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\x1b[31m\r\nContent-Length: 0\r\n\r\n",
			"NUL in a header name":    "GET /api/v1/partner/transactions HTTP/1.1\r\nHost: x\r\nX-A\x00: 1\r\n\r\n",
		} {
			res, body := rawExchange(t, env.Root, raw)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, name)
			require.Equal(t, "application/json", res.Header.Get("Content-Type"), name)
			require.NotEmpty(t, res.Header.Get("X-Request-Id"), name)
			require.NoError(t, env.ValidateSchema("Error", body), name)
			e := errorBody(t, body)
			require.Equal(t, client.ErrorCode("invalid_request"), e.Error.Code, name)
			require.Equal(t, res.Header.Get("X-Request-Id"), e.Error.RequestId, name)
			require.Equal(t, []string{"request"}, fieldsOf(e), name)
		}
		// A well-formed raw request is untouched.
		res, body := rawExchange(t, env.Root, "GET /api/v1/partner/transactions HTTP/1.1\r\nHost: x\r\nX-API-KEY: "+key+"\r\nConnection: close\r\n\r\n")
		require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	})
}

// A request its client abandons mid-way is logged and counted as 499, not as a
// server error. The client waits for "100 Continue" (the handler has started to
// read the body), sends half a body and hangs up.
func TestAbandonedRequestIs499(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		u, err := url.Parse(env.Root)
		require.NoError(t, err)
		conn, err := net.Dial("tcp", u.Host)
		require.NoError(t, err)
		require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
		_, err = conn.Write([]byte("POST /api/v1/partner/transactions HTTP/1.1\r\nHost: x\r\nX-API-KEY: " + key +
			"\r\nIdempotency-Key: " + uuid.NewString() + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"))
		require.NoError(t, err)
		line, err := bufio.NewReader(conn).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
		_, err = conn.Write([]byte("6\r\n{\"merc\r\n"))
		require.NoError(t, err)
		require.NoError(t, conn.Close())

		series := `partnerd_http_requests_total{code="499",host="",method="POST",url="/api/v1/partner/transactions"} 1`
		require.Eventually(t, func() bool {
			_, body := get(t, env.Root+"/metrics")
			return strings.Contains(body, series)
		}, 20*time.Second, 50*time.Millisecond, "the abandoned request is counted as 499")
		_, body := get(t, env.Root+"/metrics")
		for _, code := range []string{"400", "500", "503"} {
			require.NotContains(t, body, `partnerd_http_requests_total{code="`+code+`",host="",method="POST",url="/api/v1/partner/transactions"}`)
		}
		require.False(t, bytes.Contains([]byte(body), []byte(`code="5`)), "no server error counted")
	})
}

// A merchant reference spelled like a word of the contract's paths ("cancel",
// "status-history", …) is read by reference like any other: the route Echo
// matched is the one validated, never a second match of the path.
func TestReferenceNamedLikeAPathWord(t *testing.T) {
	t.Parallel()
	spec, err := httpapi.Spec()
	require.NoError(t, err)
	words := map[string]bool{}
	for path := range spec.Paths.Map() {
		for _, w := range strings.Split(path, "/") {
			if w != "" && !strings.HasPrefix(w, "{") {
				words[w] = true
			}
		}
	}
	require.True(t, words["cancel"] && words["status-history"], "the words come from the contract")
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		ctx := context.Background()
		c := env.Client(t, env.NewPartner(t))
		for w := range words {
			tx := create(t, c, direct(w, "bep20", "2000"))
			res, err := c.GetTransactionByReferenceWithResponse(ctx, w)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), "%s: %s", w, res.Body)
			require.Equal(t, tx.Id, res.JSON200.Data.Id, w)
		}
	})
}
