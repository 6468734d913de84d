package console

import (
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/web/webkit"
)

// screeningQueue is the review queue (GET /screening/reviews: held and unknown by
// default, every waiting transaction with ?state=all), each transaction with its
// deposit, its senders and every screening with its evidence, and the imported
// lists (GET /screening/lists).
func (c *Console) screeningQueue(w http.ResponseWriter, r *http.Request, ss *session) {
	c.showScreening(w, r, ss, http.StatusOK, c.decided(r, ss), "")
}

func (c *Console) showScreening(w http.ResponseWriter, r *http.Request, ss *session, status int, notice template.HTML, problem any) {
	state := oc.ListScreeningReviewsParamsState(r.URL.Query().Get("state"))
	if state != oc.All {
		state = oc.Review
	}
	cl := c.client(ss)
	reviews, err := cl.ListScreeningReviewsWithResponse(r.Context(), &oc.ListScreeningReviewsParams{State: &state})
	if err != nil || reviews.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(reviews, err), webkit.BodyOf(reviews))
		return
	}
	lists, err := cl.ListScreeningListsWithResponse(r.Context())
	if err != nil || lists.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(lists, err), webkit.BodyOf(lists))
		return
	}
	_, names, ok := c.partnerDirectory(w, r, ss)
	if !ok {
		return
	}
	c.site.Render(w, status, "screening", ss, map[string]any{"Title": "Screening", "Items": reviews.JSON200.Data,
		"State": string(state), "Lists": lists.JSON200.Data, "Names": names, "Notice": notice, "Problem": problem})
}

// review records an operator's decision on a held transaction (POST
// /transactions/{id}/review: release or block, with a required note) after its
// confirmation page, then shows the queue with the outcome.
func (c *Console) review(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	f := r.PostForm
	decision := f.Get("decision")
	r.URL.RawQuery = ""
	if strings.TrimSpace(f.Get("note")) == "" {
		c.showScreening(w, r, ss, http.StatusBadRequest, "", webkit.Sentence("Write a note: why you %s this transaction (it is audited). Nothing was changed.", decision))
		return
	}
	if f.Get("confirmed") != "yes" {
		subject := template.HTML("Release: the transaction proceeds as if its senders were clear (a false positive).")
		if decision == string(oc.Block) {
			subject = "Block: the funds are never sold, swept or sent back; the transaction fails for good and is listed in the blocked-property report."
		}
		c.confirm(w, ss, confirmation{Action: decision + " the held transaction", Subject: subject, Form: f,
			Target: fmt.Sprintf("%s/screening/%s/review", BasePath, id), Back: BasePath + "/screening"})
		return
	}
	res, err := c.client(ss).ReviewTransactionWithResponse(r.Context(), id, &oc.ReviewTransactionParams{IdempotencyKey: f.Get("idempotency_key")},
		oc.ReviewRequest{Decision: oc.ReviewRequestDecision(decision), Note: strings.TrimSpace(f.Get("note"))})
	if c.sentForApproval(w, r, res, err) {
		return
	}
	if err != nil || res.JSON200 == nil {
		status := webkit.StatusOf(res, err)
		c.showScreening(w, r, ss, status, "", webkit.APIError(status, webkit.BodyOf(res)))
		return
	}
	http.Redirect(w, r, BasePath+"/screening?"+url.Values{"decided": {id.String()}, "decision": {decision}}.Encode(), http.StatusSeeOther)
}

// decided is the notice of a review just recorded (the queue its form
// redirects to names the transaction and the decision): the transaction as it
// is now. None when the query names no transaction and decision.
func (c *Console) decided(r *http.Request, ss *session) template.HTML {
	q := r.URL.Query()
	done := map[string]string{string(oc.Release): "released", string(oc.Block): "blocked"}[q.Get("decision")]
	id, err := uuid.Parse(q.Get("decided"))
	if err != nil || done == "" {
		return ""
	}
	res, err := c.client(ss).GetOperatorTransactionWithResponse(r.Context(), id)
	if err != nil || res.JSON200 == nil {
		return ""
	}
	t := res.JSON200.Data
	return webkit.Sentence("Transaction %s %s: it is now %s.", t.MerchantReference, done, webkit.StateWords(t.Status))
}

// blockedReport passes the operator API's blocked-property report (CSV) through.
func (c *Console) blockedReport(w http.ResponseWriter, r *http.Request, ss *session) {
	res, err := c.client(ss).BlockedPropertyReport(r.Context())
	if err != nil {
		c.site.Failed(w, ss, http.StatusBadGateway, nil)
		return
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		c.site.Failed(w, ss, res.StatusCode, body)
		return
	}
	for _, h := range []string{"Content-Type", "Content-Disposition"} {
		if v := res.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, res.Body)
}
