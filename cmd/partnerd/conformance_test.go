package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/contract/conformance"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// partnerd conformance passes a freshly started service (JSON report, exit 0)
// and fails one whose answers break the contract (exit non-zero, the report's
// line names the operation).
func TestConformanceCommand(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}, nil)
	_, key, err := env.App.EnsureDemoPartner(context.Background())
	require.NoError(t, err)
	opKey := env.NewOperator(t)

	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"conformance", "--base-url", env.Root, "--api-key", key, "--operator-key", opKey, "--json"}, &out, &errOut), out.String())
	var rep conformance.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	require.Zero(t, rep.Failed)
	require.Greater(t, rep.Passed, 30)
	require.NotNil(t, rep.Result("operator", "fillOrder"))

	// Every quote answered 200 instead of the declared 201.
	target, err := url.Parse(env.Root)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method == http.MethodPost && strings.HasSuffix(r.Request.URL.Path, "/quotes") {
			r.StatusCode, r.Status = http.StatusOK, "200 OK"
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	out.Reset()
	err = run([]string{"conformance", "--base-url", srv.URL, "--api-key", key}, &out, &errOut)
	require.ErrorIs(t, err, errNonConformant)
	require.Regexp(t, `(?m)^partner +createQuote +POST /quotes +FAIL +200 +status 200: status is not supported`, out.String())

	require.Error(t, run([]string{"conformance", "--api-key", key}, &out, &errOut), "--base-url is required")
	require.Error(t, run([]string{"conformance", "--base-url", "ftp://x", "--api-key", key}, &out, &errOut))
}
