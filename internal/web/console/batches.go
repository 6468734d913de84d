package console

import (
	"fmt"
	"html/template"
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
	var notice template.HTML
	if id, err := uuid.Parse(r.URL.Query().Get("recorded")); err == nil {
		recorded, err := c.client(ss).ListFillsWithResponse(r.Context(), &oc.ListFillsParams{})
		if err == nil && recorded.JSON200 != nil {
			notice = batchNotice(recorded.JSON200.Data.Data, id)
		}
	}
	c.site.Render(w, http.StatusOK, "fill", ss, map[string]any{"Title": "Batch fill", "Items": res.JSON200.Data.Data, "Total": total.String(),
		"All": r.URL.Query().Get("all") == "1", "Notice": notice})
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
		c.confirm(w, ss, confirmation{Action: fmt.Sprintf("fill %d transactions", len(ids)), Form: f,
			Target: BasePath + "/fills", Back: BasePath + "/fills/new"})
		return
	}
	res, err := c.client(ss).CreateFillWithResponse(r.Context(), &oc.CreateFillParams{IdempotencyKey: f.Get("idempotency_key")},
		oc.BatchFillRequest{TransactionIds: ids, Rate: f.Get("rate"), Reference: f.Get("reference")})
	if c.sentForApproval(w, r, res, err) {
		return
	}
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	http.Redirect(w, r, BasePath+"/fills/new?recorded="+res.JSON200.Data.Id.String(), http.StatusSeeOther)
}

// batchNotice says what batch id (a fill or a payout, found among batches, the
// newest the API lists) recorded, as the API stored it: the page a batch's form
// redirects to shows it. None when id is not among them.
func batchNotice(batches []oc.Batch, id uuid.UUID) template.HTML {
	for _, b := range batches {
		if b.Id != id {
			continue
		}
		// The reference is the operator's text: isolated (Sentence).
		what := webkit.Sentence("%d transactions, NGN %s, reference %s", len(b.TransactionIds), webkit.Amount(b.FiatAmount), b.Reference)
		if b.Kind == oc.BatchKindFill {
			rate := template.HTML("")
			if b.Rate != nil {
				rate = webkit.Sentence(" at %s", webkit.Amount(*b.Rate))
			}
			what = webkit.Sentence("%d transactions, USDT %s%s, NGN %s, reference %s", len(b.TransactionIds), webkit.Amount(b.CryptoAmount),
				rate, webkit.Amount(b.FiatAmount), b.Reference)
			return "Fill recorded: " + what + "."
		}
		return "Payout recorded: " + what + "."
	}
	return ""
}
