package webkit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/web/webkit"
)

// An amount typed as the pages show it reads as the APIs take it; anything
// else is refused in words, never guessed.
func TestParseAmount(t *testing.T) {
	t.Parallel()
	for typed, want := range map[string]string{
		"154,225.00": "154225.00", "154225.00": "154225.00", " 154,225.00 NGN ": "154225.00", "NGN 1,549.10": "1549.10",
		"1,549.10 ngn": "1549.10", "1549.1": "1549.1", "7": "7", "1,000,000": "1000000", "0.000001 USDT": "0.000001",
		webkit.Amount("1234567.891"): "1234567.891",
	} {
		got, err := webkit.ParseAmount(typed, "NGN", "USDT")
		require.NoError(t, err, typed)
		require.Equal(t, want, got, typed)
	}
	for _, typed := range []string{"", "NGN", "1,54,225.00", "1549,10", "15,4225", "-5", "+5", "1.2.3", "1e3", "12 345", "1,549.1O", "1,549.", ",549", "USD 5"} {
		_, err := webkit.ParseAmount(typed, "NGN", "USDT")
		require.Error(t, err, typed)
	}
}
