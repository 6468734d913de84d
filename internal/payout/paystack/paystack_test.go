package paystack_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/payout/paystack"
	"partnerd/internal/payout/paystack/paystacktest"
)

func TestBanksFollowsTheCursorPages(t *testing.T) {
	t.Parallel()
	fake := paystacktest.New(t)
	fake.SetPageSize(3)
	c := paystack.New(fake.URL, paystacktest.Key, 0)
	banks, err := c.Banks(context.Background())
	require.NoError(t, err)
	require.Len(t, banks, len(paystacktest.Banks))
	require.Equal(t, paystack.Bank{Code: "044", Name: "Access Bank"}, banks[0])
	require.Equal(t, 3, fake.Calls("/bank"), "seven banks, three a page")
}

func TestResolve(t *testing.T) {
	t.Parallel()
	fake := paystacktest.New(t)
	fake.AddAccount("058", "0123456789", "ACME TRADING LIMITED")
	c := paystack.New(fake.URL, paystacktest.Key, 0)
	a, err := c.Resolve(context.Background(), "058", "0123456789")
	require.NoError(t, err)
	require.Equal(t, &paystack.Account{Number: "0123456789", Name: "ACME TRADING LIMITED"}, a)

	_, err = c.Resolve(context.Background(), "058", "0000000000")
	e, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apperr.InvalidRequest, e.Code)
	require.Equal(t, "/account_number", e.Details[0].Field)
}

func TestFaultsAreUnavailable(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]paystacktest.Fault{"refused key": paystacktest.RefuseKey, "server error": paystacktest.ServerError, "timeout": paystacktest.Hang} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := paystacktest.New(t)
			fake.AddAccount("058", "0123456789", "ACME")
			fake.SetFault(f)
			c := paystack.New(fake.URL, paystacktest.Key, 200*time.Millisecond)
			_, err := c.Banks(context.Background())
			require.Equal(t, apperr.ServiceUnavailable, apperr.CodeOf(err), "%v", err)
			_, err = c.Resolve(context.Background(), "058", "0123456789")
			require.Equal(t, apperr.ServiceUnavailable, apperr.CodeOf(err), "%v", err)
		})
	}
	fake := paystacktest.New(t)
	_, err := paystack.New(fake.URL, "sk_test_wrong", 0).Banks(context.Background())
	require.Equal(t, apperr.ServiceUnavailable, apperr.CodeOf(err))
	require.Contains(t, err.Error(), "PAYSTACK_SECRET_KEY")
}

// TestFakeValidatesAgainstTheDocument shows the fake's validator is real: requests
// Paystack's document does not allow are refused.
func TestFakeValidatesAgainstTheDocument(t *testing.T) {
	t.Parallel()
	fake := paystacktest.New(t)
	var violations []error
	fake.OnViolation(func(err error) { violations = append(violations, err) })
	get := func(path string, auth bool) int {
		req, err := http.NewRequest(http.MethodGet, fake.URL+path, nil)
		require.NoError(t, err)
		if auth {
			req.Header.Set("Authorization", "Bearer "+paystacktest.Key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	// The document types account_number and bank_code as integers.
	require.Equal(t, http.StatusBadRequest, get("/bank/resolve?account_number=notdigits&bank_code=058", true))
	// country is an enum.
	require.Equal(t, http.StatusBadRequest, get("/bank?country=atlantis", true))
	// bearerAuth is required.
	require.Equal(t, http.StatusBadRequest, get("/bank?country=nigeria", false))
	// A path Paystack does not have.
	require.Equal(t, http.StatusNotFound, get("/banks", true))
	require.Len(t, violations, 4)
	// And an allowed one passes.
	require.Equal(t, http.StatusOK, get("/bank?country=nigeria&currency=NGN", true))
	require.Len(t, violations, 4)
}
