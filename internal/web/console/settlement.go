package console

import (
	"net/http"
	"strings"

	"github.com/google/uuid"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/web/webkit"
)

// settlementData is what the partner page shows of its settlement account: the
// account (nil when none is set), the banks of the form (none, with BanksError
// saying why, when the provider cannot list them: no PAYSTACK_SECRET_KEY).
func (c *Console) settlementData(r *http.Request, ss *session, id uuid.UUID) map[string]any {
	data := map[string]any{"SettleBank": "", "SettleNumber": ""}
	cl := c.client(ss)
	if res, err := cl.GetSettlementAccountWithResponse(r.Context(), id); err == nil && res.JSON200 != nil {
		data["Account"] = res.JSON200.Data
	}
	banks, err := cl.ListBanksWithResponse(r.Context())
	switch {
	case err == nil && banks.JSON200 != nil:
		data["Banks"] = banks.JSON200.Data
	default:
		data["BanksError"] = webkit.APIError(webkit.StatusOf(banks, err), webkit.BodyOf(banks))
	}
	return data
}

// setSettlementAccount sets the partner's settlement account through the operator
// API (verified by name enquiry there). A refusal on /confirm_name shows the form
// again with the confirmation box; other refusals show the API's problem.
func (c *Console) setSettlementAccount(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	body := oc.SettlementAccountRequest{BankCode: strings.TrimSpace(r.PostFormValue("bank_code")),
		AccountNumber: strings.TrimSpace(r.PostFormValue("account_number"))}
	if r.PostFormValue("confirm_name") == "true" {
		t := true
		body.ConfirmName = &t
	}
	res, err := c.client(ss).PutSettlementAccountWithResponse(r.Context(), id,
		&oc.PutSettlementAccountParams{IdempotencyKey: r.PostFormValue("idempotency_key")}, body)
	if c.sentForApproval(w, r, res, err) {
		return
	}
	if err != nil || res.JSON200 == nil {
		status := webkit.StatusOf(res, err)
		if status == http.StatusBadRequest || status == http.StatusServiceUnavailable {
			extra := map[string]any{"Status": status, "SettleError": webkit.APIError(status, webkit.BodyOf(res)),
				"SettleBank": body.BankCode, "SettleNumber": body.AccountNumber}
			if res.JSON400 != nil {
				for _, d := range res.JSON400.Error.Details {
					if d.Field == "/confirm_name" {
						extra["ConfirmName"] = true
					}
				}
			}
			c.showPartner(w, r, ss, id, "", extra)
			return
		}
		c.site.Failed(w, ss, status, webkit.BodyOf(res))
		return
	}
	c.site.ShowOnce(w, r, ss, "/partners/"+id.String(), map[string]string{"Notice": "Settlement account set: " + res.JSON200.Data.AccountName + "."})
}
