package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/payout/paystack/paystacktest"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// The partner page in Chromium, against a fake Paystack: no settlement account
// at first; an account held by someone else is refused with both names and the
// confirmation box, then set once confirmed, shown beside the partner's name
// with the warning that the names differ.
func TestConsoleSettlementAccountInChromium(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { settlementFlow(t, db) })
	}
}

func settlementFlow(t *testing.T, db testdb.Database) {
	fake := paystacktest.New(t)
	env := apitest.Start(t, db, map[string]string{"PAYSTACK_BASE_URL": fake.URL, "PAYSTACK_SECRET_KEY": paystacktest.Key})
	_, adminKey := env.NewOperatorWith(t, "Ada", operators.Admin)
	admin := env.OperatorClient(t, adminKey)
	res, err := admin.CreatePartnerWithResponse(context.Background(), &oc.CreatePartnerParams{IdempotencyKey: uuid.NewString()},
		oc.NameRequest{Name: "Acme Trading Ltd"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	partner := res.JSON200.Data.Partner.Id
	fake.AddAccount("057", "2222222222", "JOHN DOE")
	base := env.Root + "/console"

	ctx := webtest.Browser(t)
	signIn(t, ctx, base, adminKey)
	var text string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/partners/"+partner.String()),
		chromedp.Text("#no-settlement", &text, chromedp.ByID)))
	require.Contains(t, text, "No settlement account yet")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SetValue("#settlement-bank-code", "057", chromedp.ByID),
		chromedp.SendKeys("#settlement-account-number", "2222222222", chromedp.ByID),
		chromedp.Click("#set-settlement", chromedp.ByID),
		chromedp.WaitVisible("#confirm-name", chromedp.ByID),
		chromedp.Text("#settlement-error", &text, chromedp.ByID)))
	require.Contains(t, text, "JOHN DOE")
	require.Contains(t, text, "Acme Trading Ltd")
	webtest.RequirePostRedirectGet(t, ctx, chromedp.Click("#confirm-name", chromedp.ByID), chromedp.Click("#set-settlement", chromedp.ByID),
		chromedp.WaitVisible("#settlement-account", chromedp.ByID))
	var number, mismatch, bank string
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#notice", &text, chromedp.ByID),
		chromedp.Text("#settlement-number", &number, chromedp.ByID), chromedp.Text("#settlement-bank", &bank, chromedp.ByID),
		chromedp.Text("#settlement-mismatch", &mismatch, chromedp.ByID)))
	require.Contains(t, text, "Settlement account set")
	require.Equal(t, "2222222222", number)
	require.Contains(t, bank, "Zenith Bank")
	require.Contains(t, mismatch, "JOHN DOE")
	require.Contains(t, mismatch, "Acme Trading Ltd")
}
