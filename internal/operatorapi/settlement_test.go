package operatorapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/payout/paystack/paystacktest"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// paystackEnv starts the service against a fake Paystack, with more settings.
func paystackEnv(t *testing.T, db testdb.Database, more map[string]string) (*apitest.Env, *paystacktest.Server) {
	t.Helper()
	fake := paystacktest.New(t)
	settings := map[string]string{"PAYSTACK_BASE_URL": fake.URL, "PAYSTACK_SECRET_KEY": paystacktest.Key, "PAYSTACK_TIMEOUT": "300ms"}
	for k, v := range more {
		settings[k] = v
	}
	return apitest.Start(t, db, settings), fake
}

// newNamedPartner creates a partner named name through c (an admin).
func newNamedPartner(t *testing.T, c *oc.ClientWithResponses, name string) uuid.UUID {
	t.Helper()
	res, err := c.CreatePartnerWithResponse(context.Background(), &oc.CreatePartnerParams{IdempotencyKey: key()}, oc.NameRequest{Name: name})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data.Partner.Id
}

func putAccount(t *testing.T, c *oc.ClientWithResponses, partner uuid.UUID, bank, number string, confirm bool) *oc.PutSettlementAccountResponse {
	t.Helper()
	body := oc.SettlementAccountRequest{BankCode: bank, AccountNumber: number}
	if confirm {
		body.ConfirmName = &confirm
	}
	res, err := c.PutSettlementAccountWithResponse(context.Background(), partner, &oc.PutSettlementAccountParams{IdempotencyKey: key()}, body)
	require.NoError(t, err)
	return res
}

func getAccount(t *testing.T, c *oc.ClientWithResponses, partner uuid.UUID) *oc.GetSettlementAccountResponse {
	t.Helper()
	res, err := c.GetSettlementAccountWithResponse(context.Background(), partner)
	require.NoError(t, err)
	return res
}

func requireField(t *testing.T, e *oc.Error, field string) {
	t.Helper()
	require.NotNil(t, e)
	require.Equal(t, oc.ErrorCodeInvalidRequest, e.Error.Code)
	require.NotEmpty(t, e.Error.Details)
	require.Equal(t, field, e.Error.Details[0].Field, e.Message)
}

// The banks come from Paystack; an account is verified by name enquiry and stored
// when the holder's name is the partner's (audited); a differing name is refused
// until confirmed, and then stored with name_matches false; an unknown account or
// bank is refused on its field; a viewer may read but not set.
func TestSettlementAccount(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env, fake := paystackEnv(t, db, nil)
		ctx := context.Background()
		adminID, adminKey := env.NewOperatorWith(t, "Ada", operators.Admin)
		admin := env.OperatorClient(t, adminKey)
		_, viewerKey := env.NewOperatorWith(t, "Dayo", operators.Viewer)
		viewer := env.OperatorClient(t, viewerKey)
		partner := newNamedPartner(t, admin, "Acme Trading Ltd")
		fake.AddAccount("058", "0123456789", "ACME TRADING LIMITED")
		fake.AddAccount("057", "2222222222", "JOHN DOE")

		banks, err := viewer.ListBanksWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, banks.StatusCode(), string(banks.Body))
		require.Len(t, banks.JSON200.Data, len(paystacktest.Banks))
		require.Contains(t, banks.JSON200.Data, oc.Bank{Code: "058", Name: "Guaranty Trust Bank"})

		none := getAccount(t, viewer, partner)
		require.Equal(t, http.StatusNotFound, none.StatusCode(), string(none.Body))

		denied := putAccount(t, viewer, partner, "058", "0123456789", false)
		require.Equal(t, http.StatusForbidden, denied.StatusCode(), string(denied.Body))

		ok := putAccount(t, admin, partner, "058", "0123456789", false)
		require.Equal(t, http.StatusOK, ok.StatusCode(), string(ok.Body))
		a := ok.JSON200.Data
		require.Equal(t, "ACME TRADING LIMITED", a.AccountName)
		require.Equal(t, "Acme Trading Ltd", a.PartnerName)
		require.Equal(t, "Guaranty Trust Bank", a.BankName)
		require.True(t, a.NameMatches)
		require.Equal(t, adminID, a.SetBy)
		got := getAccount(t, viewer, partner)
		require.Equal(t, http.StatusOK, got.StatusCode(), string(got.Body))
		require.Equal(t, a, got.JSON200.Data)

		action := oc.AuditAction("settlement_account_set")
		audit, err := viewer.ListAuditWithResponse(ctx, &oc.ListAuditParams{Action: &action})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, audit.StatusCode(), string(audit.Body))
		require.Len(t, audit.JSON200.Data.Data, 1)
		e := audit.JSON200.Data.Data[0]
		require.Equal(t, adminID, e.OperatorId)
		require.Equal(t, partner, *e.SubjectId)
		require.Equal(t, "058 …6789", *e.Reference)

		// Another's account: refused on /confirm_name, nothing changes; confirmed, stored.
		differ := putAccount(t, admin, partner, "057", "2222222222", false)
		require.Equal(t, http.StatusBadRequest, differ.StatusCode(), string(differ.Body))
		requireField(t, differ.JSON400, "/confirm_name")
		require.Contains(t, differ.JSON400.Message, "JOHN DOE")
		require.Contains(t, differ.JSON400.Message, "Acme Trading Ltd")
		require.Equal(t, "0123456789", getAccount(t, viewer, partner).JSON200.Data.AccountNumber, "nothing stored")
		confirmed := putAccount(t, admin, partner, "057", "2222222222", true)
		require.Equal(t, http.StatusOK, confirmed.StatusCode(), string(confirmed.Body))
		require.False(t, confirmed.JSON200.Data.NameMatches)
		require.Equal(t, "JOHN DOE", getAccount(t, viewer, partner).JSON200.Data.AccountName)

		unknown := putAccount(t, admin, partner, "058", "9999999999", false)
		require.Equal(t, http.StatusBadRequest, unknown.StatusCode(), string(unknown.Body))
		requireField(t, unknown.JSON400, "/account_number")
		bank := putAccount(t, admin, partner, "999", "0123456789", false)
		require.Equal(t, http.StatusBadRequest, bank.StatusCode(), string(bank.Body))
		requireField(t, bank.JSON400, "/bank_code")
		require.Equal(t, "2222222222", getAccount(t, viewer, partner).JSON200.Data.AccountNumber, "nothing stored")
		require.Equal(t, 1, fake.Calls("/bank"), "the bank list is kept")

		missing := putAccount(t, admin, uuid.New(), "058", "0123456789", false)
		require.Equal(t, http.StatusNotFound, missing.StatusCode(), string(missing.Body))
	})
}

// Paystack refusing the key, failing or not answering is 503, and nothing is stored.
func TestSettlementAccountProviderFaults(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env, fake := paystackEnv(t, db, nil)
		_, adminKey := env.NewOperatorWith(t, "Ada", operators.Admin)
		admin := env.OperatorClient(t, adminKey)
		partner := newNamedPartner(t, admin, "Acme Trading Ltd")
		fake.AddAccount("058", "0123456789", "ACME TRADING LIMITED")
		for name, f := range map[string]paystacktest.Fault{"refused key": paystacktest.RefuseKey, "server error": paystacktest.ServerError, "timeout": paystacktest.Hang} {
			fake.SetFault(f)
			res := putAccount(t, admin, partner, "058", "0123456789", false)
			require.Equal(t, http.StatusServiceUnavailable, res.StatusCode(), name+": "+string(res.Body))
			require.Equal(t, oc.ErrorCodeServiceUnavailable, res.JSON503.Error.Code)
			require.Equal(t, http.StatusNotFound, getAccount(t, admin, partner).StatusCode(), name+": nothing stored")
		}
		// With the bank list kept, name enquiry failing is 503 too.
		fake.SetFault(paystacktest.None)
		banks, err := admin.ListBanksWithResponse(context.Background())
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, banks.StatusCode(), string(banks.Body))
		fake.SetFault(paystacktest.ServerError)
		res := putAccount(t, admin, partner, "058", "0123456789", false)
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode(), string(res.Body))
		require.Equal(t, http.StatusNotFound, getAccount(t, admin, partner).StatusCode())
	})
}

// Without PAYSTACK_SECRET_KEY the banks and setting an account are 503; reading is not.
func TestSettlementAccountWithoutProvider(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, nil)
		_, adminKey := env.NewOperatorWith(t, "Ada", operators.Admin)
		admin := env.OperatorClient(t, adminKey)
		partner := newNamedPartner(t, admin, "Acme Trading Ltd")
		banks, err := admin.ListBanksWithResponse(context.Background())
		require.NoError(t, err)
		require.Equal(t, http.StatusServiceUnavailable, banks.StatusCode(), string(banks.Body))
		require.Contains(t, banks.JSON503.Message, "PAYSTACK_SECRET_KEY")
		res := putAccount(t, admin, partner, "058", "0123456789", false)
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode(), string(res.Body))
		require.Equal(t, http.StatusNotFound, getAccount(t, admin, partner).StatusCode())
	})
}

// With APPROVALS naming payout, setting an account is a proposal a second admin's
// approval carries out.
func TestSettlementAccountWaitsForASecondAdmin(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env, fake := paystackEnv(t, db, map[string]string{"APPROVALS": "payout"})
		_, adaKey := env.NewOperatorWith(t, "Ada", operators.Admin)
		bolaID, bolaKey := env.NewOperatorWith(t, "Bola", operators.Admin)
		ada, bola := env.OperatorClient(t, adaKey), env.OperatorClient(t, bolaKey)
		partner := newNamedPartner(t, ada, "Acme Trading Ltd")
		fake.AddAccount("058", "0123456789", "ACME TRADING LIMITED")
		res := putAccount(t, ada, partner, "058", "0123456789", false)
		require.Equal(t, http.StatusAccepted, res.StatusCode(), string(res.Body))
		p := res.JSON202.Data
		require.Equal(t, "putSettlementAccount", p.Operation)
		require.Equal(t, http.StatusNotFound, getAccount(t, ada, partner).StatusCode(), "proposed: nothing set")
		require.Equal(t, 0, fake.Calls("/bank/resolve"), "nothing asked before the approval")
		done := approve(t, bola, p.Id)
		require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
		got := getAccount(t, ada, partner)
		require.Equal(t, http.StatusOK, got.StatusCode(), string(got.Body))
		require.Equal(t, bolaID, got.JSON200.Data.SetBy, "set by the approver")
		require.True(t, got.JSON200.Data.NameMatches)
	})
}
