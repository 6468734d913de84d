package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/web/webkit"
)

// typedBatch is what an operator typed in a batch form, shown again with what
// was wrong when the form is refused: nothing typed is lost.
type typedBatch struct {
	Error                   template.HTML
	Reference, Amount, Rate string
	Ticked                  map[uuid.UUID]bool
}

// typedOf reads the batch form f as typed.
func typedOf(f url.Values, problem template.HTML) *typedBatch {
	t := &typedBatch{Error: problem, Reference: f.Get("reference"), Amount: f.Get("fiat_amount"), Rate: f.Get("rate"),
		Ticked: map[uuid.UUID]bool{}}
	for _, id := range ticked(f) {
		t.Ticked[id] = true
	}
	return t
}

// ticked are the transactions ticked in form f.
func ticked(f url.Values) []uuid.UUID {
	var ids []uuid.UUID
	for _, v := range f["transaction_ids"] {
		if id, err := uuid.Parse(v); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// fillForm lists the confirmed transactions awaiting their fill (every partner),
// to tick and fill with one liquidity order.
func (c *Console) fillForm(w http.ResponseWriter, r *http.Request, ss *session) {
	c.showFillForm(w, r, ss, http.StatusOK, nil)
}

// showFillForm renders the batch fill page with status, and typed when the
// form was refused.
func (c *Console) showFillForm(w http.ResponseWriter, r *http.Request, ss *session, status int, typed *typedBatch) {
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
	if typed == nil {
		typed = &typedBatch{}
	}
	c.site.Render(w, status, "fill", ss, map[string]any{"Title": "Batch fill", "Items": res.JSON200.Data.Data, "Total": total.String(),
		"All": r.URL.Query().Get("all") == "1", "Notice": notice, "Typed": typed})
}

// fill records one liquidity order for the ticked transactions (POST /fills),
// after its confirmation page. The first sending checks what the page can (a
// transaction ticked, the rate an amount as the pages show them, a reference)
// and confirms with the transactions' references and grouped amounts.
func (c *Console) fill(w http.ResponseWriter, r *http.Request, ss *session) {
	f := r.PostForm
	ids := ticked(f)
	if f.Get("confirmed") != "yes" {
		refuse := func(problem template.HTML) { c.showFillForm(w, r, ss, http.StatusBadRequest, typedOf(f, problem)) }
		if len(ids) == 0 {
			refuse("Tick at least one transaction to fill.")
			return
		}
		rate, err := webkit.ParseAmount(f.Get("rate"), "NGN", "NGN/USDT")
		if err != nil {
			refuse(webkit.Sentence("The executed rate: %s.", err.Error()))
			return
		}
		if strings.TrimSpace(f.Get("reference")) == "" {
			refuse("Type the liquidity order's reference.")
			return
		}
		f.Set("rate", rate)
		var crypto decimal.Decimal
		shown := map[string]template.HTML{"rate": webkit.Sentence("%s NGN per USDT", webkit.Amount(rate))}
		for _, id := range ids {
			t, ok := c.readTransaction(w, r, ss, id)
			if !ok {
				return
			}
			crypto = crypto.Add(decimal.RequireFromString(t.CryptoAmount))
			shown["transaction_ids="+id.String()] = webkit.Sentence("%s · %s · %s USDT", t.MerchantReference, t.PartnerName, webkit.Amount(t.CryptoAmount))
		}
		c.confirm(w, ss, confirmation{Action: fmt.Sprintf("fill %s, %s USDT in all", webkit.Count(len(ids), "transaction"), webkit.Amount(crypto.String())),
			Form: f, Shown: shown, Target: BasePath + "/fills", Back: BasePath + "/fills/new"})
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

// readTransaction reads transaction id for a confirmation page, or answers the
// failure and reports false.
func (c *Console) readTransaction(w http.ResponseWriter, r *http.Request, ss *session, id uuid.UUID) (*oc.OperatorTransactionDetail, bool) {
	res, err := c.client(ss).GetOperatorTransactionWithResponse(r.Context(), id)
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return nil, false
	}
	return &res.JSON200.Data, true
}

// payoutForm starts from a partner: without one chosen it offers the choice
// alone; with one, that partner's transactions awaiting their payout, to tick
// and pay with one bank transfer.
func (c *Console) payoutForm(w http.ResponseWriter, r *http.Request, ss *session) {
	pid, _ := uuid.Parse(r.URL.Query().Get("partner_id"))
	c.showPayoutForm(w, r, ss, pid, http.StatusOK, nil)
}

// showPayoutForm renders the batch payout page for partner pid (uuid.Nil: none
// chosen yet) with status, and typed when the form was refused.
func (c *Console) showPayoutForm(w http.ResponseWriter, r *http.Request, ss *session, pid uuid.UUID, status int, typed *typedBatch) {
	parts, names, ok := c.partnerDirectory(w, r, ss)
	if !ok {
		return
	}
	data := map[string]any{"Title": "Batch payout", "Partner": pid, "Partners": parts, "Names": names, "Chosen": pid != uuid.Nil}
	if typed == nil {
		typed = &typedBatch{}
	}
	data["Typed"] = typed
	if pid != uuid.Nil {
		p := oc.ListStageParams{Stage: ptr(oc.StageAwaitingPayout), Order: ptr(oc.Oldest), Limit: ptr(100), PartnerId: &pid}
		res, err := c.client(ss).ListStageWithResponse(r.Context(), &p)
		if err != nil || res.JSON200 == nil {
			c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
			return
		}
		var total decimal.Decimal
		for _, t := range res.JSON200.Data.Data {
			total = total.Add(decimal.RequireFromString(t.Amount))
		}
		data["Items"], data["Total"] = res.JSON200.Data.Data, total.StringFixed(2)
		data["All"] = r.URL.Query().Get("all") == "1"
		data["SelectAll"] = BasePath + "/payouts/new?" + url.Values{"partner_id": {pid.String()}, "all": {"1"}}.Encode()
		data["Clear"] = BasePath + "/payouts/new?" + url.Values{"partner_id": {pid.String()}}.Encode()
		if id, err := uuid.Parse(r.URL.Query().Get("recorded")); err == nil {
			recorded, err := c.client(ss).ListPayoutsWithResponse(r.Context(), &oc.ListPayoutsParams{PartnerId: &pid})
			if err == nil && recorded.JSON200 != nil {
				data["Notice"] = batchNotice(recorded.JSON200.Data.Data, id)
			}
		}
	}
	c.site.Render(w, status, "payout", ss, data)
}

// payout records one bank transfer paying the ticked transactions (POST
// /payouts), after its confirmation page. The first sending checks what the
// page can: a transaction ticked, each of them the chosen partner's, the total
// typed as the pages show amounts ("154,225.00", "154,225.00 NGN") and equal to
// their sum (the API refuses a mismatch too; this says it first, with both),
// and confirms with the partner's name, the references and grouped amounts.
func (c *Console) payout(w http.ResponseWriter, r *http.Request, ss *session) {
	f := r.PostForm
	pid, err := uuid.Parse(f.Get("partner_id"))
	if err != nil || pid == uuid.Nil {
		c.showPayoutForm(w, r, ss, uuid.Nil, http.StatusBadRequest, typedOf(f, "Choose a partner first."))
		return
	}
	ids := ticked(f)
	if f.Get("confirmed") != "yes" {
		refuse := func(problem template.HTML) {
			c.showPayoutForm(w, r, ss, pid, http.StatusBadRequest, typedOf(f, problem))
		}
		if len(ids) == 0 {
			refuse("Tick at least one transaction to pay.")
			return
		}
		typed, err := webkit.ParseAmount(f.Get("fiat_amount"), "NGN")
		if err != nil {
			refuse(webkit.Sentence("The NGN transferred: %s.", err.Error()))
			return
		}
		if strings.TrimSpace(f.Get("reference")) == "" {
			refuse("Type the bank transfer's reference.")
			return
		}
		sum := decimal.Zero
		partner := ""
		shown := map[string]template.HTML{}
		for _, id := range ids {
			t, ok := c.readTransaction(w, r, ss, id)
			if !ok {
				return
			}
			if t.PartnerId != pid {
				refuse(webkit.Sentence("Transaction %s is another partner's; choose the partner again and tick its transactions.", t.MerchantReference))
				return
			}
			partner = t.PartnerName
			sum = sum.Add(decimal.RequireFromString(t.Amount))
			shown["transaction_ids="+id.String()] = webkit.Sentence("%s · %s NGN", t.MerchantReference, webkit.Amount(t.Amount))
		}
		if !decimal.RequireFromString(typed).Equal(sum) {
			refuse(webkit.Sentence("The NGN transferred (%s NGN) is not the sum of the %s ticked (%s NGN); nothing was recorded.",
				webkit.Amount(typed), webkit.Count(len(ids), "transaction"), webkit.Amount(sum.StringFixed(2))))
			return
		}
		f.Set("fiat_amount", sum.StringFixed(2))
		shown["partner_id"] = webkit.Sentence("%s", partner)
		shown["fiat_amount"] = webkit.Sentence("%s NGN", webkit.Amount(sum.StringFixed(2)))
		c.confirm(w, ss, confirmation{Action: fmt.Sprintf("pay out %s, %s NGN in all", webkit.Count(len(ids), "transaction"), webkit.Amount(sum.StringFixed(2))),
			Subject: webkit.Sentence("To %s", partner), Form: f, Shown: shown, Target: BasePath + "/payouts",
			Back: BasePath + "/payouts/new?" + url.Values{"partner_id": {pid.String()}}.Encode()})
		return
	}
	res, err := c.client(ss).CreatePayoutWithResponse(r.Context(), &oc.CreatePayoutParams{IdempotencyKey: f.Get("idempotency_key")},
		oc.PayoutRequest{PartnerId: pid, TransactionIds: ids, Reference: f.Get("reference"), FiatAmount: f.Get("fiat_amount")})
	if c.sentForApproval(w, r, res, err) {
		return
	}
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	http.Redirect(w, r, BasePath+"/payouts/new?"+url.Values{"partner_id": {pid.String()}, "recorded": {res.JSON200.Data.Id.String()}}.Encode(),
		http.StatusSeeOther)
}

// payouts lists the payouts recorded, newest first, each with its partner, its
// transactions and its total; the CSV has them all.
func (c *Console) payouts(w http.ResponseWriter, r *http.Request, ss *session) {
	p := &oc.ListPayoutsParams{Limit: ptr(100)}
	if pid, err := uuid.Parse(r.URL.Query().Get("partner_id")); err == nil {
		p.PartnerId = &pid
	}
	if cur := r.URL.Query().Get("cursor"); cur != "" {
		p.Cursor = &cur
	}
	res, err := c.client(ss).ListPayoutsWithResponse(r.Context(), p)
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	parts, err := c.client(ss).ListPartnersWithResponse(r.Context())
	if err != nil || parts.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(parts, err), webkit.BodyOf(parts))
		return
	}
	names := map[uuid.UUID]string{}
	for _, pt := range parts.JSON200.Data {
		names[pt.Id] = pt.Name
	}
	type row struct {
		oc.Batch
		Partner string
	}
	rows := make([]row, len(res.JSON200.Data.Data))
	for i, b := range res.JSON200.Data.Data {
		rows[i] = row{Batch: b}
		if b.PartnerId != nil {
			rows[i].Partner = names[*b.PartnerId]
		}
	}
	data := map[string]any{"Title": "Payouts", "Items": rows}
	if next := res.JSON200.Data.NextCursor; next != nil {
		q := r.URL.Query()
		q.Set("cursor", *next)
		data["Next"] = BasePath + "/payouts?" + q.Encode()
	}
	c.site.Render(w, http.StatusOK, "payouts", ss, data)
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
		what := webkit.Sentence("%s, NGN %s, reference %s", webkit.Count(len(b.TransactionIds), "transaction"), webkit.Amount(b.FiatAmount), b.Reference)
		if b.Kind == oc.BatchKindFill {
			rate := template.HTML("")
			if b.Rate != nil {
				rate = webkit.Sentence(" at %s", webkit.Amount(*b.Rate))
			}
			what = webkit.Sentence("%s, USDT %s%s, NGN %s, reference %s", webkit.Count(len(b.TransactionIds), "transaction"), webkit.Amount(b.CryptoAmount),
				rate, webkit.Amount(b.FiatAmount), b.Reference)
			return "Fill recorded: " + what + "."
		}
		return "Payout recorded: " + what + "."
	}
	return ""
}
