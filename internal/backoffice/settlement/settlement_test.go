package settlement_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice/settlement"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/payout/paystack"
)

func TestNamesMatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		account, partner string
		want             bool
	}{
		{"ACME TRADING LIMITED", "Acme Trading Ltd", true},
		{"ACME TRADING (NIG.) LTD.", "Acme Trading", true},
		{"Acme Trading Nigeria Plc", "acme  trading", true},
		{"A.B.C. Foods", "ABC Foods Limited", true},
		{"Acme-Trading", "Acme Trading", true},
		{"Nigerian Breweries", "Nigerian Breweries Plc", true},
		{"Nigeria Breweries", "Breweries", false},
		{"JOHN DOE", "Acme Trading Ltd", false},
		{"Acme Trading", "Acme Trade", false},
		{"", "", false},
		{"Ltd", "Limited", false},
	} {
		require.Equal(t, c.want, settlement.NamesMatch(c.account, c.partner), "%q vs %q", c.account, c.partner)
	}
	require.Equal(t, "acmetrading", settlement.NormalName("Acme Trading (Nig.) Ltd."))
}

type countingProvider struct{ calls int }

func (p *countingProvider) Banks(context.Context) ([]paystack.Bank, error) {
	p.calls++
	return []paystack.Bank{{Code: "058", Name: "Guaranty Trust Bank"}}, nil
}

func (p *countingProvider) Resolve(context.Context, string, string) (*paystack.Account, error) {
	return nil, apperr.New(apperr.ServiceUnavailable, "not in this test")
}

// The bank list is asked for once an hour (by the injected clock); without a
// provider, listing banks is ServiceUnavailable naming the setting.
func TestBanksKeptAnHour(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	p := &countingProvider{}
	s := settlement.New(settlement.Deps{Provider: p, Now: func() time.Time { return now }})
	for range 3 {
		b, err := s.Banks(context.Background())
		require.NoError(t, err)
		require.Len(t, b, 1)
	}
	require.Equal(t, 1, p.calls)
	now = now.Add(settlement.BanksTTL - time.Second)
	_, _ = s.Banks(context.Background())
	require.Equal(t, 1, p.calls)
	now = now.Add(time.Second)
	_, _ = s.Banks(context.Background())
	require.Equal(t, 2, p.calls, "an hour later the list is asked for again")

	_, err := settlement.New(settlement.Deps{}).Banks(context.Background())
	require.Equal(t, apperr.ServiceUnavailable, apperr.CodeOf(err))
	require.Contains(t, err.Error(), "PAYSTACK_SECRET_KEY")
}
