package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/web/webkit"
)

// Four eyes: when the server's APPROVALS names an action, the operator API only
// proposes it (202, a pending approval) until a second operator approves it.
// Every action form of the console hands its answer to sentForApproval first,
// which sends the operator to the approvals queue with the proposal named; the
// queue lists the proposals, with Approve and Reject each after its
// confirmation page.

// proposal is what an action's answer has when the action may be proposed
// instead of run (the generated responses with a 202).
type proposal interface {
	GetJSON202() *oc.ApprovalPending
}

// sentForApproval answers an action the operator API only proposed (202): a
// redirect (post/redirect/get) to the approvals queue, which says so. It reports
// false, doing nothing, for any other answer (the caller's to handle).
func (c *Console) sentForApproval(w http.ResponseWriter, r *http.Request, res any, err error) bool {
	p, ok := res.(proposal)
	if err != nil || !ok {
		return false
	}
	a := p.GetJSON202()
	if a == nil {
		return false
	}
	http.Redirect(w, r, BasePath+"/approvals?"+url.Values{"proposed": {a.Data.Id.String()}}.Encode(), http.StatusSeeOther)
	return true
}

// approvalStatuses are the approvals page's tabs, in order: the queue first.
var approvalStatuses = []oc.ApprovalStatus{oc.ApprovalStatusPending, oc.ApprovalStatusApproving, oc.ApprovalStatusApproved,
	oc.ApprovalStatusRejected, oc.ApprovalStatusFailed, oc.ApprovalStatusExpired}

// approvalRow is one proposal as the page shows it: Mine when the signed-in
// operator proposed it, Who the operators in words ("proposed by Ada, approved
// by Grace"), Outcome what the decision said (the rejection's note, the
// action's refusal); both Sentences, each name and note in its own isolate.
type approvalRow struct {
	oc.Approval
	Mine         bool
	Who, Outcome template.HTML
}

// rowOf is a as the signed-in operator ss reads it.
func rowOf(a oc.Approval, ss *session) approvalRow {
	row := approvalRow{Approval: a, Mine: a.ProposedBy.Id == ss.Data.OperatorID, Who: webkit.Sentence("proposed by %s", a.ProposedBy.Name)}
	if d := a.DecidedBy; d != nil {
		switch {
		case a.Status == oc.ApprovalStatusRejected && d.Id == a.ProposedBy.Id:
			row.Who += webkit.Sentence(", withdrawn by %s", d.Name)
		case a.Status == oc.ApprovalStatusRejected:
			row.Who += webkit.Sentence(", rejected by %s", d.Name)
		case a.Status == oc.ApprovalStatusApproving:
			row.Who += webkit.Sentence(", being approved by %s", d.Name)
		default:
			row.Who += webkit.Sentence(", approved by %s", d.Name)
		}
	}
	if a.Note != nil {
		row.Outcome = webkit.Sentence("Note: %s", *a.Note)
	}
	if f := a.Failure; f != nil {
		row.Outcome = webkit.Sentence("The action was refused when approved, so nothing changed: %s", webkit.Words(f.Code))
		for _, d := range f.Details {
			row.Outcome += webkit.Sentence(" (%s: %s)", d.Field, webkit.Visible(d.Message))
		}
		row.Outcome += "."
	}
	return row
}

// approvals lists GET /approvals: the proposals waiting for a second operator
// (status pending, by default) or those of another status.
func (c *Console) approvals(w http.ResponseWriter, r *http.Request, ss *session) {
	c.showApprovals(w, r, ss, http.StatusOK, c.approvalNotice(r, ss), "")
}

func (c *Console) showApprovals(w http.ResponseWriter, r *http.Request, ss *session, status int, notice template.HTML, problem any) {
	q := r.URL.Query()
	st := oc.ApprovalStatus(q.Get("status"))
	if st == "" {
		st = oc.ApprovalStatusPending
	}
	p := &oc.ListApprovalsParams{Status: &st, Limit: ptr(100)}
	if s := q.Get("cursor"); s != "" {
		p.Cursor = &s
	}
	res, err := c.client(ss).ListApprovalsWithResponse(r.Context(), p)
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	rows := make([]approvalRow, len(res.JSON200.Data.Data))
	for i, a := range res.JSON200.Data.Data {
		rows[i] = rowOf(a, ss)
	}
	next := ""
	if nc := res.JSON200.Data.NextCursor; nc != nil {
		next = BasePath + "/approvals?" + url.Values{"status": {string(st)}, "cursor": {*nc}}.Encode()
	}
	tabs := make([]approvalTab, len(approvalStatuses))
	for i, s := range approvalStatuses {
		tabs[i] = approvalTab{Status: string(s), Label: approvalStatusWords(s), Href: template.URL(BasePath + "/approvals?" + url.Values{"status": {string(s)}}.Encode()),
			Current: s == st}
	}
	open := st == oc.ApprovalStatusPending || st == oc.ApprovalStatusApproving
	data := map[string]any{"Title": "Approvals", "Items": rows, "Status": string(st), "StatusWords": approvalStatusWords(st), "Open": open, "Tabs": tabs,
		"Next": next, "Notice": notice, "Problem": problem}
	c.site.Opened(r, ss, data)
	c.site.Render(w, status, "approvals", ss, data)
}

// approvalTab is one status tab of the approvals page.
type approvalTab struct {
	Status, Label string
	Href          template.URL
	Current       bool
}

// approvalStatusWords is a proposal's status in words ("being approved").
func approvalStatusWords(s oc.ApprovalStatus) string {
	if s == oc.ApprovalStatusApproving {
		return "being approved"
	}
	return webkit.StateWords(s)
}

// approvalNotice is the notice of a proposal just made (?proposed=ID, where an
// action the API only proposed redirects) or just decided (?decided=ID): the
// proposal as it is now. None when the query names none.
func (c *Console) approvalNotice(r *http.Request, ss *session) template.HTML {
	q := r.URL.Query()
	key, proposed := "decided", false
	if q.Get("proposed") != "" {
		key, proposed = "proposed", true
	}
	id, err := uuid.Parse(q.Get(key))
	if err != nil {
		return ""
	}
	res, err := c.client(ss).GetApprovalWithResponse(r.Context(), id)
	if err != nil || res.JSON200 == nil {
		return ""
	}
	a := res.JSON200.Data
	if proposed && a.Status == oc.ApprovalStatusPending {
		return webkit.Sentence("Sent for approval: a second operator with the %s role must approve it. Nothing is done until then. (%s)",
			a.RequiredRole, a.Summary)
	}
	row := rowOf(a, ss)
	switch a.Status {
	case oc.ApprovalStatusApproved:
		return webkit.Sentence("Approved: the action ran (%s; %s).", a.Summary, row.Who)
	case oc.ApprovalStatusRejected:
		if a.DecidedBy != nil && a.DecidedBy.Id == a.ProposedBy.Id {
			return webkit.Sentence("Withdrawn: nothing was done (%s).", a.Summary)
		}
		return webkit.Sentence("Rejected: nothing was done (%s; %s).", a.Summary, row.Who)
	}
	return webkit.Sentence("The proposal is %s (%s; %s).", approvalStatusWords(a.Status), a.Summary, row.Who)
}

// decide approves or rejects a proposal (POST /approvals/{id}/approve or
// /reject, a rejection with a required note) after its confirmation page, then
// shows the outcome; a refusal (the proposer approving their own, a missing
// role, a proposal no longer pending, the action refused when it runs) is shown
// in words on the queue.
func (c *Console) decide(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	op := r.PathValue("op")
	if op != "approve" && op != "reject" {
		c.site.NotFound(w, ss)
		return
	}
	f := r.PostForm
	r.URL.RawQuery = ""
	note := strings.TrimSpace(f.Get("note"))
	if op == "reject" && note == "" {
		c.showApprovals(w, r, ss, http.StatusBadRequest, "", "Write a note: why you reject this proposal (it is kept with it and audited). Nothing was changed.")
		return
	}
	cl := c.client(ss)
	if f.Get("confirmed") != "yes" {
		res, err := cl.GetApprovalWithResponse(r.Context(), id)
		if err != nil || res.JSON200 == nil {
			c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
			return
		}
		a := res.JSON200.Data
		words := "Approve the proposal: the action runs now, as you"
		if op == "reject" {
			words = "Reject the proposal: nothing is done"
			if a.ProposedBy.Id == ss.Data.OperatorID {
				words = "Withdraw your proposal: nothing is done"
			}
		}
		c.confirm(w, ss, confirmation{Action: words, Subject: webkit.Sentence("%s · proposed by %s, %s", a.Summary, a.ProposedBy.Name,
			a.ProposedAt.UTC().Format("2006-01-02 15:04:05 UTC")),
			Form: f, Target: fmt.Sprintf("%s/approvals/%s/%s", BasePath, id, op), Back: BasePath + "/approvals"})
		return
	}
	ik := f.Get("idempotency_key")
	var (
		status int
		body   []byte
		done   *oc.Approval
	)
	if op == "approve" {
		res, err := cl.ApproveApprovalWithResponse(r.Context(), id, &oc.ApproveApprovalParams{IdempotencyKey: ik}, make(oc.EmptyRequest))
		status, body = webkit.StatusOf(res, err), webkit.BodyOf(res)
		if err == nil && res.JSON200 != nil {
			done = &res.JSON200.Data
		}
	} else {
		res, err := cl.RejectApprovalWithResponse(r.Context(), id, &oc.RejectApprovalParams{IdempotencyKey: ik}, oc.RejectRequest{Note: note})
		status, body = webkit.StatusOf(res, err), webkit.BodyOf(res)
		if err == nil && res.JSON200 != nil {
			done = &res.JSON200.Data
		}
	}
	if done == nil {
		c.showApprovals(w, r, ss, status, "", webkit.APIError(status, body))
		return
	}
	q := url.Values{"status": {string(done.Status)}, "decided": {done.Id.String()}}
	if secret := shownKey(done.Result); secret != "" {
		// An approved partner key (a partner created, a key issued or rolled): its
		// secret is shown to the approver once, as the action's own page would.
		path := BasePath + "/approvals"
		q.Set("shown", c.site.Seal(ss, path, map[string]string{"NewKey": secret}))
	}
	http.Redirect(w, r, BasePath+"/approvals?"+q.Encode(), http.StatusSeeOther)
}

// shownKey is the new API key in an approved action's answer (a partner
// created with its first key, a key issued or rolled), or "".
func shownKey(result *map[string]interface{}) string {
	if result == nil {
		return ""
	}
	data, _ := (*result)["data"].(map[string]interface{})
	if s, ok := data["key"].(string); ok {
		return s
	}
	if k, ok := data["key"].(map[string]interface{}); ok {
		s, _ := k["key"].(string)
		return s
	}
	return ""
}
