package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/idempotency"
)

func TestFingerprintCoversTheWholeBody(t *testing.T) {
	t.Parallel()
	fp := func(body string) string { return idempotency.Fingerprint("POST", "/x", []byte(body)) }
	require.Equal(t, fp(`{"a":1,"b":2}`), fp("{ \"b\": 2, \"a\": 1 }\n"), "formatting does not count")
	require.NotEqual(t, fp(`{"a":1}`), fp(`{"a":1} garbage`), "data after the value counts")
	require.NotEqual(t, fp(`{"a":1}`), fp(`{"a":1}{"a":2}`))
	require.NotEqual(t, fp(`{"a":1}`), fp(`{"a":2}`))
}
