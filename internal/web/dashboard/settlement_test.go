package dashboard_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/partnerusers"
	"partnerd/internal/payout/paystack/paystacktest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// The partner's account page shows its settlement account read-only, the
// account number masked but for its last four digits; none set says so.
func TestDashboardShowsSettlementAccountMasked(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			fake := paystacktest.New(t)
			env := startSite(t, db, map[string]string{"PAYSTACK_BASE_URL": fake.URL, "PAYSTACK_SECRET_KEY": paystacktest.Key})
			key := env.NewPartner(t)
			partner := env.PartnerID(t, key)
			u := newUser(t, env, partner, partnerusers.Finance)
			base := env.Root + "/dashboard"
			ctx := webtest.Browser(t)
			signIn(t, ctx, base, u.Email, testPassword)
			require.Equal(t, http.StatusOK, open(t, ctx, base+"/account"))
			require.Contains(t, text(t, ctx, "#no-settlement"), "No settlement account")

			fake.AddAccount("058", "0123456789", "SOMEONE ELSE LTD")
			_, adminKey := env.NewOperatorWith(t, "Ada", operators.Admin)
			confirm := true
			res, err := env.OperatorClient(t, adminKey).PutSettlementAccountWithResponse(context.Background(), partner,
				&oc.PutSettlementAccountParams{IdempotencyKey: uuid.NewString()},
				oc.SettlementAccountRequest{BankCode: "058", AccountNumber: "0123456789", ConfirmName: &confirm})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))

			require.Equal(t, http.StatusOK, open(t, ctx, base+"/account"))
			require.Equal(t, "••••••6789", text(t, ctx, "#settlement-number"))
			require.Contains(t, text(t, ctx, "#settlement-bank"), "Guaranty Trust Bank")
			require.Contains(t, text(t, ctx, "#settlement-name"), "SOMEONE ELSE LTD")
			var html string
			require.NoError(t, chromedp.Run(ctx, chromedp.OuterHTML("html", &html, chromedp.ByQuery)))
			require.NotContains(t, html, "0123456789", "the full number is never sent")
			require.NotContains(t, html, "<form method=\"post\" action=\"/dashboard/settlement", "read-only")
		})
	}
}
