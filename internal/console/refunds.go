package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	oc "partnerd/gen/operatorclient"
)

// refundKinds are the refund tasks' kinds, in the filter's order.
var refundKinds = []oc.RefundTaskKind{oc.Unmatched, oc.Excess, oc.Short, oc.Dust}

// refundTasks lists GET /refund-tasks, filtered by kind and status (open by default).
func (c *Console) refundTasks(w http.ResponseWriter, r *http.Request, ss *session) {
	c.showRefundTasks(w, r, ss, http.StatusOK, "", "")
}

func (c *Console) showRefundTasks(w http.ResponseWriter, r *http.Request, ss *session, status int, notice, problem string) {
	q := r.URL.Query()
	kind, st := q.Get("kind"), q.Get("status")
	if st == "" {
		st = string(oc.ListRefundTasksParamsStatusOpen)
	}
	p := oc.ListRefundTasksParams{Status: ptr(oc.ListRefundTasksParamsStatus(st)), Limit: ptr(100)}
	if kind != "" {
		p.Kind = ptr(oc.RefundTaskKind(kind))
	}
	if s := q.Get("cursor"); s != "" {
		p.Cursor = &s
	}
	res, err := c.client(ss).ListRefundTasksWithResponse(r.Context(), &p)
	if err != nil || res.JSON200 == nil {
		c.fail(w, ss, statusOf(res, err), bodyOf(res))
		return
	}
	next := ""
	if nc := res.JSON200.Data.NextCursor; nc != nil {
		next = BasePath + "/refund-tasks?" + url.Values{"cursor": {*nc}, "kind": {kind}, "status": {st}}.Encode()
	}
	c.render(w, status, "refunds", ss, map[string]any{"Title": "Refund tasks", "Items": res.JSON200.Data.Data, "Kind": kind,
		"Status": st, "Kinds": refundKinds, "Next": next, "Notice": notice, "Problem": problem})
}

// resolve closes a refund task (POST /refund-tasks/{id}/resolve) after its
// confirmation page, then shows the open tasks with the outcome.
func (c *Console) resolve(w http.ResponseWriter, r *http.Request, ss *session) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	f := r.PostForm
	act := f.Get("action")
	if f.Get("confirmed") != "yes" {
		c.render(w, http.StatusOK, "confirm", ss, map[string]any{"Title": "Confirm", "Action": "resolve refund task as " + act,
			"Fields": confirmFields(f), "Key": uuid.NewString(), "Target": fmt.Sprintf("%s/refund-tasks/%s/resolve", BasePath, id),
			"Back": BasePath + "/refund-tasks"})
		return
	}
	req := oc.ResolveRequest{Action: oc.ResolveRequestAction(act)}
	if s := strings.TrimSpace(f.Get("tx_hash")); s != "" {
		req.TxHash = &s
	}
	if s := strings.TrimSpace(f.Get("note")); s != "" {
		req.Note = &s
	}
	res, err := c.client(ss).ResolveRefundTaskWithResponse(r.Context(), id, &oc.ResolveRefundTaskParams{IdempotencyKey: f.Get("idempotency_key")}, req)
	r.URL.RawQuery = ""
	if err != nil || res.JSON200 == nil {
		status := statusOf(res, err)
		c.showRefundTasks(w, r, ss, status, "", apiError(status, bodyOf(res)))
		return
	}
	t := res.JSON200.Data
	c.showRefundTasks(w, r, ss, http.StatusOK, fmt.Sprintf("Refund task %s (%s, %s USDT) resolved: %s.", t.Id, t.Kind, t.Amount, t.Status), "")
}
