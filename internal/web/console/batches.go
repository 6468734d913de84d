package console

import (
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/web/webkit"
)

// fillForm lists the confirmed transactions awaiting their fill (every partner),
// to tick and fill with one liquidity order.
func (c *Console) fillForm(w http.ResponseWriter, r *http.Request, ss *session) {
	res, err := c.client(ss).ListStageWithResponse(r.Context(), &oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill), Order: ptr(oc.Oldest), Limit: ptr(100)})
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	var total decimal.Decimal
	for _, t := range res.JSON200.Data.Data {
		total = total.Add(decimal.RequireFromString(t.CryptoAmount))
	}
	c.site.Render(w, http.StatusOK, "fill", ss, map[string]any{"Title": "Batch fill", "Items": res.JSON200.Data.Data, "Total": total.String(),
		"All": r.URL.Query().Get("all") == "1"})
}

// fill records one liquidity order for the ticked transactions (POST /fills),
// after its confirmation page.
func (c *Console) fill(w http.ResponseWriter, r *http.Request, ss *session) {
	f := r.PostForm
	var ids []uuid.UUID
	for _, v := range f["transaction_ids"] {
		if id, err := uuid.Parse(v); err == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		c.site.Message(w, http.StatusBadRequest, ss, "Not done", "Tick at least one transaction to fill, then try again.")
		return
	}
	if f.Get("confirmed") != "yes" {
		c.site.Render(w, http.StatusOK, "confirm", ss, map[string]any{"Title": "Confirm", "Action": fmt.Sprintf("fill %d transactions", len(ids)),
			"Fields": confirmFields(f), "Key": uuid.NewString(), "Target": BasePath + "/fills", "Back": BasePath + "/fills/new"})
		return
	}
	res, err := c.client(ss).CreateFillWithResponse(r.Context(), &oc.CreateFillParams{IdempotencyKey: f.Get("idempotency_key")},
		oc.BatchFillRequest{TransactionIds: ids, Rate: f.Get("rate"), Reference: f.Get("reference")})
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	b := res.JSON200.Data
	c.site.Render(w, http.StatusOK, "message", ss, map[string]any{"Title": "Fill recorded", "Done": true,
		"Message": fmt.Sprintf("Fill %s recorded: %d transactions, USDT %s at %s, NGN %s, reference %s.", b.Id, len(b.TransactionIds), b.CryptoAmount, deref(b.Rate), b.FiatAmount, b.Reference)})
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
