package contractcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The closed reading refuses a property the contract does not declare, where
// the declared reading lets it pass; an object extending another (allOf) keeps
// every property of both.
func TestClosedReading(t *testing.T) {
	t.Parallel()
	partnerOpen, err := Partner(AsDeclared)
	require.NoError(t, err)
	partnerClosed, err := Partner(Closed)
	require.NoError(t, err)
	errBody := `{"success":false,"message":"x","error":{"code":"not_found","details":[],"request_id":"r"%s}%s}`
	valid := sprintf2(errBody, "", "")
	require.NoError(t, partnerOpen.ValidateSchema("Error", []byte(valid)))
	require.NoError(t, partnerClosed.ValidateSchema("Error", []byte(valid)))
	for _, extra := range []string{sprintf2(errBody, "", `,"trace":"…"`), sprintf2(errBody, `,"hint":"…"`, "")} {
		require.NoError(t, partnerOpen.ValidateSchema("Error", []byte(extra)), "the contract as written accepts additions")
		require.ErrorContains(t, partnerClosed.ValidateSchema("Error", []byte(extra)), "unsupported", extra)
	}

	opClosed, err := Operator(Closed)
	require.NoError(t, err)
	key := `{"id":"2f0f6c2e-9d8a-4a53-8f4f-2b2a1f9f0d11","prefix":"sk_op_abc","status":"active","created_at":"2026-11-23T10:00:00Z",` +
		`"last_used_at":null,"expires_at":null,"revoked_at":null,"key":"sk_op_secret"%s}`
	require.NoError(t, opClosed.ValidateSchema("NewApiKey", []byte(sprintf2(key, "", ""))), "allOf branches' properties are all declared")
	require.ErrorContains(t, opClosed.ValidateSchema("NewApiKey", []byte(sprintf2(key, `,"owner":"x"`, ""))), "unsupported")
	require.Error(t, opClosed.ValidateSchema("NewApiKey", []byte(`{"key":"sk_op_secret"}`)), "the base's required properties stay required")
}

// sprintf2 fills the first two %s of format.
func sprintf2(format, a, b string) string {
	return sprintf(sprintf(format, a), b)
}
