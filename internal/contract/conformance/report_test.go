package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/contract/contractcheck"
	"partnerd/internal/httpapi"
)

// An operation the walk never reaches is never a silent pass: with no skip
// reason it fails when nothing else did, and is skipped saying why when an
// earlier step failed.
func TestUnexercisedOperationsShow(t *testing.T) {
	t.Parallel()
	check, err := contractcheck.Partner(contractcheck.Closed)
	require.NoError(t, err)
	for _, runFailed := range []bool{false, true} {
		rec := newRecorder("partner", check, httpapi.BasePath)
		rec.skip("putWebhookEndpoint", "asked not to")
		byOp := map[string]Result{}
		for _, r := range rec.results(runFailed) {
			byOp[r.Operation] = r
		}
		require.Len(t, byOp, len(check.Operations()))
		require.Equal(t, Skip, byOp["putWebhookEndpoint"].Outcome)
		require.Equal(t, "asked not to", byOp["putWebhookEndpoint"].Reason)
		if runFailed {
			require.Equal(t, Skip, byOp["createQuote"].Outcome)
			require.Contains(t, byOp["createQuote"].Reason, "not reached")
		} else {
			require.Equal(t, Fail, byOp["createQuote"].Outcome)
			require.Contains(t, byOp["createQuote"].Problems[0], "not exercised")
		}
	}
}

func TestRootURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://localhost:8080":                        "http://localhost:8080",
		"https://sandbox.example.com/":                 "https://sandbox.example.com",
		"https://sandbox.example.com/api/v1/partner":   "https://sandbox.example.com",
		"https://sandbox.example.com/api/v1/operator/": "https://sandbox.example.com",
	} {
		got, err := rootURL(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got)
	}
	for _, bad := range []string{"", "localhost:8080", "ftp://x", "https://x.example.com/other"} {
		_, err := rootURL(bad)
		require.Error(t, err, bad)
	}
}
