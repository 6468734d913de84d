package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/web/webkit"
)

// funcs are the console's own template functions: ago, age and until, against
// the console's clock.
func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		"ago":   func(t time.Time) string { return ago(c.d.Now().Sub(t)) },
		"age":   func(t any) string { return age(c.d.Now(), t) },
		"until": func(t time.Time) string { return until(t.Sub(c.d.Now())) },
	}
}

// until is how long until an instant d ahead ("in 23h"), or "past" when it has come.
func until(d time.Duration) string {
	switch {
	case d <= 0:
		return "past"
	case d < time.Minute:
		return "in under a minute"
	case d < time.Hour:
		return fmt.Sprintf("in %dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("in %dh", int(d.Hours()))
	default:
		return fmt.Sprintf("in %dd", int(d.Hours()/24))
	}
}

// frame is what the header shows of a session: the operator and the sign-out
// form's CSRF token.
func frame(ss *session, data map[string]any) {
	if ss != nil {
		data["Operator"] = ss.Data.Name
		data["CSRF"] = ss.CSRF
	}
}

func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
}

// age is how long ago t (a time.Time or *time.Time; nil is "never") was, to the
// second under a minute: the chain progress is stored every few seconds, and an
// age of 40 s against 3 s tells an operator no instance is watching.
func age(now time.Time, t any) string {
	var at time.Time
	switch v := t.(type) {
	case time.Time:
		at = v
	case *time.Time:
		if v == nil {
			return "never"
		}
		at = *v
	}
	d := now.Sub(at)
	if d < time.Minute {
		return fmt.Sprintf("%d s ago", max(int(d.Seconds()), 0))
	}
	return ago(d)
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, ss *session) {
	res, err := c.client(ss).GetOverviewWithResponse(r.Context())
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	// Each resend form its own idempotency key: a form sent twice is one resend.
	keys := map[string]string{}
	for _, f := range res.JSON200.Data.FailingWebhooks {
		keys[f.PartnerId.String()] = uuid.NewString()
	}
	data := map[string]any{"Title": "Overview", "O": res.JSON200.Data, "Keys": keys}
	if n, err := strconv.Atoi(r.URL.Query().Get("resent")); err == nil && n >= 0 {
		events := "events"
		if n == 1 {
			events = "event"
		}
		data["Notice"] = webkit.Sentence("%d webhook %s queued for delivery now.", n, events)
	}
	c.site.Render(w, http.StatusOK, "overview", ss, data)
}

// resendBacklog sends a failing partner's waiting webhook events now (the
// overview's "Resend backlog"), then shows the overview with how many were
// queued.
func (c *Console) resendBacklog(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	res, err := c.client(ss).ResendWebhookBacklogWithResponse(r.Context(), id,
		&oc.ResendWebhookBacklogParams{IdempotencyKey: r.PostForm.Get("idempotency_key")})
	if err != nil || res.JSON202 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	http.Redirect(w, r, BasePath+"?"+url.Values{"resent": {strconv.Itoa(res.JSON202.Data.Queued)}}.Encode(), http.StatusSeeOther)
}

func (c *Console) list(w http.ResponseWriter, r *http.Request, ss *session) {
	q := r.URL.Query()
	p := oc.ListStageParams{Order: ptr(oc.Oldest), Limit: ptr(100)}
	if s := q.Get("stage"); s != "" {
		st := oc.Stage(s)
		p.Stage = &st
	}
	if s := strings.TrimSpace(q.Get("q")); s != "" {
		p.Q = &s
	}
	if s := q.Get("cursor"); s != "" {
		p.Cursor = &s
	}
	res, err := c.client(ss).ListStageWithResponse(r.Context(), &p)
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	next := ""
	if nc := res.JSON200.Data.NextCursor; nc != nil {
		v := url.Values{"cursor": {*nc}, "stage": {q.Get("stage")}, "q": {q.Get("q")}}
		next = BasePath + "/transactions?" + v.Encode()
	}
	csvq := url.Values{}
	for _, k := range []string{"stage", "q"} {
		if v := q.Get(k); v != "" {
			csvq.Set(k, v)
		}
	}
	c.site.Render(w, http.StatusOK, "list", ss, map[string]any{"Title": "Transactions", "Stage": q.Get("stage"), "Q": q.Get("q"),
		"Items": res.JSON200.Data.Data, "Next": next, "Stages": stages, "CSV": BasePath + "/transactions.csv?" + csvq.Encode()})
}

var stages = []oc.Stage{oc.StageAwaitingFill, oc.StageAwaitingSettlement, oc.StageAwaitingPayout, oc.StageFailed, oc.StageConfirmingTooLong}

func (c *Console) transaction(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	c.showTransaction(w, r, ss, id, http.StatusOK, actionDone[r.URL.Query().Get("done")], "")
}

func (c *Console) showTransaction(w http.ResponseWriter, r *http.Request, ss *session, id uuid.UUID, status int, notice string, problem any) {
	res, err := c.client(ss).GetOperatorTransactionWithResponse(r.Context(), id)
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	// Only the actions the state machine allows now are offered (the API refuses
	// the rest anyway).
	allowed := map[string]bool{}
	for _, a := range res.JSON200.Data.AllowedActions {
		allowed[string(a)] = true
	}
	c.site.Render(w, status, "transaction", ss, map[string]any{"Title": "Transaction", "T": res.JSON200.Data, "Allowed": allowed,
		"Notice": notice, "Problem": problem})
}

// action runs a transaction action after its confirmation page.
func (c *Console) action(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	f := r.PostForm
	act := f.Get("action")
	if f.Get("confirmed") != "yes" {
		// Say which transaction, whose, and how much, not only the form's values.
		t, ok := c.readTransaction(w, r, ss, id)
		if !ok {
			return
		}
		// Amounts are taken as the pages show them ("1,549.10", "154,225.00
		// NGN") and checked here, on the first sending, not at the last step.
		shown := map[string]template.HTML{}
		for name, unit := range map[string]string{"rate": "NGN per USDT", "fiat_amount": "NGN"} {
			if f.Get(name) == "" {
				continue
			}
			v, err := webkit.ParseAmount(f.Get(name), "NGN", "NGN/USDT")
			if err != nil {
				c.showTransaction(w, r, ss, id, http.StatusBadRequest, "",
					webkit.Sentence("%s: %s. Nothing was recorded.", fieldLabels[name], err.Error()))
				return
			}
			f.Set(name, v)
			shown[name] = webkit.Sentence("%s %s", webkit.Amount(v), unit)
		}
		words, ok := actionWords[act]
		if !ok {
			words = act
		}
		// The reference and the partner's name are the partner's text: each in
		// its own isolate (Sentence), so neither moves the amounts beside it.
		c.confirm(w, ss, confirmation{Action: words,
			Subject: webkit.Sentence("%s · %s · %s USDT → %s NGN at %s · %s", t.MerchantReference, t.PartnerName,
				webkit.Amount(t.CryptoAmount), webkit.Amount(t.Amount), webkit.Amount(t.Rate), webkit.StateWords(t.Status)),
			Form: f, Shown: shown, Target: fmt.Sprintf("%s/transactions/%s/action", BasePath, id),
			Back: fmt.Sprintf("%s/transactions/%s", BasePath, id)})
		return
	}
	cl, ctx, ik := c.client(ss), r.Context(), f.Get("idempotency_key")
	var res webkit.Answer
	var err error
	switch act {
	case "fill":
		res, err = cl.FillOrderWithResponse(ctx, id, &oc.FillOrderParams{IdempotencyKey: ik}, oc.FillRequest{Rate: f.Get("rate"), FiatAmount: f.Get("fiat_amount"), Reference: f.Get("reference")})
	case "settle":
		res, err = cl.SettleOrderWithResponse(ctx, id, &oc.SettleOrderParams{IdempotencyKey: ik}, oc.ReferenceRequest{Reference: f.Get("reference")})
	case "payout":
		res, err = cl.SettlePayoutWithResponse(ctx, id, &oc.SettlePayoutParams{IdempotencyKey: ik}, oc.ReferenceRequest{Reference: f.Get("reference")})
	case "fail":
		res, err = cl.FailTransactionWithResponse(ctx, id, &oc.FailTransactionParams{IdempotencyKey: ik}, oc.FailRequest{Reason: f.Get("reason")})
	case "accept":
		res, err = cl.AcceptShortPaymentWithResponse(ctx, id, &oc.AcceptShortPaymentParams{IdempotencyKey: ik}, oc.AcceptRequest{Reason: f.Get("reason")})
	case "refund":
		res, err = cl.RefundTransactionWithResponse(ctx, id, &oc.RefundTransactionParams{IdempotencyKey: ik}, oc.RefundRequest{TxHash: f.Get("tx_hash")})
	default:
		c.site.Message(w, http.StatusBadRequest, ss, "Not done", "Unknown action.")
		return
	}
	if c.sentForApproval(w, r, res, err) {
		return
	}
	status, body := webkit.StatusOf(res, err), webkit.BodyOf(res)
	if status != http.StatusOK {
		c.showTransaction(w, r, ss, id, status, "", webkit.APIError(status, body))
		return
	}
	// Post/redirect/get: the answer is a page of its own, which a reload reads
	// again instead of sending the action again.
	http.Redirect(w, r, fmt.Sprintf("%s/transactions/%s?done=%s", BasePath, id, url.QueryEscape(act)), http.StatusSeeOther)
}

// actionDone says what a recorded action did, on the transaction's page the
// action redirects to.
var actionDone = map[string]string{
	"fill": "Done: the sale (fill) is recorded.", "settle": "Done: the settlement is recorded.",
	"payout": "Done: the payout to the partner is recorded.", "accept": "Done: the short payment is accepted.",
	"fail": "Done: the transaction is failed.", "refund": "Done: the refund on chain is recorded.",
}

// field is one value carried through a confirmation page: Name is the form's,
// Label what the operator reads.
type field struct {
	Name, Label, Value string
	// Shown is how the value reads (empty: the value as sent).
	Shown template.HTML
}

// fieldLabels name the action forms' fields in words.
var fieldLabels = map[string]string{
	"action": "Action", "rate": "Executed rate (NGN per USDT)", "fiat_amount": "NGN amount", "reference": "Reference",
	"reason": "Reason", "tx_hash": "Chain tx hash", "note": "Note", "partner_id": "Partner", "transaction_ids": "Transaction",
	"prefix": "Key", "overlap": "Old key works for", "decision": "Decision",
}

// confirmation is an action's confirmation page: what it does (Action), to
// what (Subject: a Sentence, its names and references isolated), the form's
// fields carried through (Form), where the confirmed form goes (Target) and
// where Cancel leads (Back).
type confirmation struct {
	Action, Target, Back string
	Subject              template.HTML
	Form                 url.Values
	// Shown is how a field's value reads on the page, by name (or name=value,
	// for fields sent several times): a partner's name for its id, a
	// transaction's reference and amount for its id, an amount grouped. A field
	// not in it is shown as sent.
	Shown map[string]template.HTML
}

// confirm shows cf's confirmation page with a fresh Idempotency-Key: made here,
// so a double submit of the confirmed form replays instead of acting twice.
func (c *Console) confirm(w http.ResponseWriter, ss *session, cf confirmation) {
	c.site.Render(w, http.StatusOK, "confirm", ss, map[string]any{"Title": "Confirm", "Action": cf.Action, "Subject": cf.Subject,
		"Fields": confirmFields(cf.Form, cf.Shown), "Key": uuid.NewString(), "Target": cf.Target, "Back": cf.Back})
}

// confirmFields are the action's fields, carried through the confirmation page,
// each shown as shown says (see confirmation.Shown).
func confirmFields(f url.Values, shown map[string]template.HTML) []field {
	var out []field
	for _, n := range []string{"action", "decision", "partner_id", "rate", "fiat_amount", "reference", "reason", "tx_hash", "note", "prefix", "overlap"} {
		if v := f.Get(n); v != "" {
			out = append(out, field{n, fieldLabels[n], v, shown[n]})
		}
	}
	for _, v := range f["transaction_ids"] {
		out = append(out, field{"transaction_ids", fieldLabels["transaction_ids"], v, shown["transaction_ids="+v]})
	}
	return out
}

// actionWords says what a transaction action records, for its confirmation page.
var actionWords = map[string]string{
	"fill": "Record the executed sale (fill)", "settle": "Record the settlement", "payout": "Record the payout to the partner",
	"accept": "Accept the short payment", "fail": "Fail the transaction", "refund": "Record the refund on chain",
}

func (c *Console) deposits(w http.ResponseWriter, r *http.Request, ss *session) {
	res, err := c.client(ss).ListUnmatchedDepositsWithResponse(r.Context(), &oc.ListUnmatchedDepositsParams{Limit: ptr(100)})
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	c.site.Render(w, http.StatusOK, "deposits", ss, map[string]any{"Title": "Unmatched deposits", "Items": res.JSON200.Data.Data,
		"CSV": BasePath + "/deposits.csv"})
}

func (c *Console) partners(w http.ResponseWriter, r *http.Request, ss *session) {
	c.showPartners(w, r, ss)
}

func (c *Console) showPartners(w http.ResponseWriter, r *http.Request, ss *session) {
	res, err := c.client(ss).ListPartnersWithResponse(r.Context())
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	data := map[string]any{"Title": "Partners", "Items": res.JSON200.Data, "Key": uuid.NewString()}
	c.site.Opened(r, ss, data)
	c.site.Render(w, http.StatusOK, "partners", ss, data)
}

func (c *Console) createPartner(w http.ResponseWriter, r *http.Request, ss *session) {
	res, err := c.client(ss).CreatePartnerWithResponse(r.Context(), &oc.CreatePartnerParams{IdempotencyKey: r.PostForm.Get("idempotency_key")},
		oc.NameRequest{Name: r.PostForm.Get("name")})
	if c.sentForApproval(w, r, res, err) {
		return
	}
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	created := res.JSON200.Data
	c.site.ShowOnce(w, r, ss, "/partners", map[string]string{"CreatedName": created.Partner.Name, "CreatedKey": created.Key.Key})
}

func (c *Console) partner(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	c.showPartner(w, r, ss, id, "")
}

// revokedNotice is the notice of a key just revoked (the page its form
// redirects to names the key's prefix), when one of keys has that prefix and
// is revoked; else none.
func revokedNotice(r *http.Request, keys []oc.ApiKey) string {
	prefix := r.URL.Query().Get("revoked")
	for _, k := range keys {
		if prefix != "" && k.Prefix == prefix && k.Status == oc.ApiKeyStatusRevoked {
			return "Key " + prefix + "… revoked: it stops working now."
		}
	}
	return ""
}

func (c *Console) showPartner(w http.ResponseWriter, r *http.Request, ss *session, id uuid.UUID, notice string,
	extra ...map[string]any) {
	res, err := c.client(ss).ListPartnerKeysWithResponse(r.Context(), id)
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	var name string
	if ps, err := c.client(ss).ListPartnersWithResponse(r.Context()); err == nil && ps.JSON200 != nil {
		for _, p := range ps.JSON200.Data {
			if p.Id == id {
				name = p.Name
			}
		}
	}
	users, err := c.client(ss).ListPartnerUsersWithResponse(r.Context(), id)
	if err != nil || users.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(users, err), webkit.BodyOf(users))
		return
	}
	if notice == "" {
		notice = revokedNotice(r, res.JSON200.Data)
	}
	data := map[string]any{"Title": "Partner " + webkit.IsolateText(name), "Name": name, "ID": id,
		"Keys": res.JSON200.Data, "Notice": notice, "Key": uuid.NewString(), "Users": users.JSON200.Data}
	for k, v := range c.settlementData(r, ss, id) {
		data[k] = v
	}
	c.site.Opened(r, ss, data)
	status := http.StatusOK
	for _, e := range extra {
		for k, v := range e {
			data[k] = v
		}
		if s, ok := e["Status"].(int); ok {
			status = s
		}
	}
	c.site.Render(w, status, "partner", ss, data)
}

// inviteUser invites a person to the partner's team (the first admin, usually)
// through the operator API, and shows the invitation link once.
func (c *Console) inviteUser(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	res, err := c.client(ss).InvitePartnerUserWithResponse(r.Context(), id, &oc.InvitePartnerUserParams{IdempotencyKey: r.PostFormValue("idempotency_key")},
		oc.InvitePartnerUserRequest{Email: strings.TrimSpace(r.PostFormValue("email")), Role: oc.PartnerUserRole(r.PostFormValue("role"))})
	if err != nil || res.JSON201 == nil {
		status := webkit.StatusOf(res, err)
		if status == http.StatusBadRequest {
			c.showPartner(w, r, ss, id, "", map[string]any{"Status": status, "InviteError": webkit.APIError(status, webkit.BodyOf(res))})
			return
		}
		c.site.Failed(w, ss, status, webkit.BodyOf(res))
		return
	}
	inv := res.JSON201.Data
	c.site.ShowOnce(w, r, ss, "/partners/"+id.String(), map[string]string{"Invited": inv.User.Email, "InviteLink": inv.Invitation.InviteLink,
		"InviteExpires": inv.Invitation.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC")})
}

// keyAction rolls or revokes a partner key.
func (c *Console) keyAction(w http.ResponseWriter, r *http.Request, ss *session) {
	id, err1 := uuid.Parse(r.PathValue("id"))
	kid, err2 := uuid.Parse(r.PathValue("kid"))
	if err1 != nil || err2 != nil {
		c.site.NotFound(w, ss)
		return
	}
	cl := c.client(ss)
	switch r.PathValue("op") {
	case "roll":
		overlap := strings.TrimSpace(r.PostForm.Get("overlap"))
		var req oc.RollRequest
		if overlap != "" {
			req.Overlap = &overlap
		}
		res, err := cl.RollPartnerKeyWithResponse(r.Context(), id, kid, &oc.RollPartnerKeyParams{IdempotencyKey: r.PostForm.Get("idempotency_key")}, req)
		if c.sentForApproval(w, r, res, err) {
			return
		}
		if err != nil || res.JSON200 == nil {
			c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
			return
		}
		c.site.ShowOnce(w, r, ss, "/partners/"+id.String(), map[string]string{"NewKey": res.JSON200.Data.Key, "Notice": "Key rolled."})
	case "revoke":
		res, err := cl.RevokePartnerKeyWithResponse(r.Context(), id, kid, nil)
		if err != nil || res.JSON200 == nil {
			c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
			return
		}
		http.Redirect(w, r, BasePath+"/partners/"+id.String()+"?"+url.Values{"revoked": {res.JSON200.Data.Prefix}}.Encode(), http.StatusSeeOther)
	default:
		c.site.NotFound(w, ss)
	}
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request, ss *session) {
	p := oc.ListAuditParams{Limit: ptr(100)}
	if s := r.URL.Query().Get("cursor"); s != "" {
		p.Cursor = &s
	}
	res, err := c.client(ss).ListAuditWithResponse(r.Context(), &p)
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	next := ""
	if nc := res.JSON200.Data.NextCursor; nc != nil {
		next = BasePath + "/audit?" + url.Values{"cursor": {*nc}}.Encode()
	}
	c.site.Render(w, http.StatusOK, "audit", ss, map[string]any{"Title": "Audit log", "Items": res.JSON200.Data.Data, "Next": next,
		"CSV": BasePath + "/audit.csv"})
}

func ptr[T any](v T) *T { return &v }
