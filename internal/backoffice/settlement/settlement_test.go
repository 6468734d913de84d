package settlement_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice/settlement"
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
