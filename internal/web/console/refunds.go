package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/chain"
	"partnerd/internal/web/webkit"
)

// refundKinds are the refund tasks' kinds, in the filter's order.
var refundKinds = []oc.RefundTaskKind{oc.Unmatched, oc.Excess, oc.Short, oc.Dust}

// refundTasks lists GET /refund-tasks, filtered by kind and status (open by default).
func (c *Console) refundTasks(w http.ResponseWriter, r *http.Request, ss *session) {
	c.showRefundTasks(w, r, ss, http.StatusOK, resolvedNotice(r.URL.Query()), "")
}

// resolvedNotice is the notice of a refund task just resolved (the list its
// form redirects to names the task and how it ended), or none.
func resolvedNotice(q url.Values) string {
	id, err := uuid.Parse(q.Get("resolved"))
	as := q.Get("as")
	if err != nil || (as != string(oc.UnmatchedDepositStatusRefunded) && as != string(oc.UnmatchedDepositStatusCredited)) {
		return ""
	}
	return fmt.Sprintf("Refund task %s resolved: %s.", webkit.Short(id.String()), webkit.StateWords(as))
}

// refundFilter is the refund tasks page's filter, from its query: kind, status
// (open by default), partner and network.
type refundFilter struct {
	Kind, Status, Partner, Network string
}

func refundFilterOf(q url.Values) refundFilter {
	f := refundFilter{Kind: q.Get("kind"), Status: q.Get("status"), Partner: q.Get("partner_id"), Network: q.Get("network")}
	if f.Status == "" {
		f.Status = string(oc.ListRefundTasksParamsStatusOpen)
	}
	return f
}

// params is the operator API's query for f.
func (f refundFilter) params() (*oc.ListRefundTasksParams, error) {
	p := &oc.ListRefundTasksParams{Status: ptr(oc.ListRefundTasksParamsStatus(f.Status)), Limit: ptr(100)}
	if f.Kind != "" {
		p.Kind = ptr(oc.RefundTaskKind(f.Kind))
	}
	if f.Partner != "" {
		id, err := uuid.Parse(f.Partner)
		if err != nil {
			return nil, fmt.Errorf("no such partner")
		}
		p.PartnerId = &id
	}
	if f.Network != "" {
		p.Network = &f.Network
	}
	return p, nil
}

// With is the refund tasks page's address for f with key set to value (the tabs
// keep the other filters).
func (f refundFilter) With(key, value string) template.URL {
	return template.URL(BasePath + "/refund-tasks?" + f.query(key, value))
}

// query is f's query with key set to value.
func (f refundFilter) query(key, value string) string {
	v := url.Values{"kind": {f.Kind}, "status": {f.Status}, "partner_id": {f.Partner}, "network": {f.Network}}
	v.Set(key, value)
	for k := range v {
		if v.Get(k) == "" {
			v.Del(k)
		}
	}
	return v.Encode()
}

func (c *Console) showRefundTasks(w http.ResponseWriter, r *http.Request, ss *session, status int, notice string, problem any) {
	f := refundFilterOf(r.URL.Query())
	p, err := f.params()
	if err != nil {
		c.site.Message(w, http.StatusBadRequest, ss, "Not found", "No such partner.")
		return
	}
	if s := r.URL.Query().Get("cursor"); s != "" {
		p.Cursor = &s
	}
	cl := c.client(ss)
	res, err := cl.ListRefundTasksWithResponse(r.Context(), p)
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	parts, names, ok := c.partnerDirectory(w, r, ss)
	if !ok {
		return
	}
	next := ""
	if nc := res.JSON200.Data.NextCursor; nc != nil {
		next = BasePath + "/refund-tasks?" + f.query("cursor", *nc)
	}
	c.site.Render(w, status, "refunds", ss, map[string]any{"Title": "Refund tasks", "Items": res.JSON200.Data.Data, "F": f,
		"Kind": f.Kind, "Status": f.Status, "Kinds": refundKinds, "Partners": parts, "Names": names,
		"Networks": networks, "Next": next, "Notice": notice, "Problem": problem,
		"CSV": BasePath + "/refund-tasks.csv?" + f.query("", "")})
}

// networks are the networks a list can be filtered by.
var networks = []string{chain.BEP20, chain.TRC20}

// resolve closes a refund task (POST /refund-tasks/{id}/resolve) after its
// confirmation page, then shows the open tasks with the outcome.
func (c *Console) resolve(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	f := r.PostForm
	act := f.Get("action")
	if f.Get("confirmed") != "yes" {
		c.confirm(w, ss, confirmation{Action: "resolve refund task as " + webkit.StateWords(act), Form: f,
			Target: fmt.Sprintf("%s/refund-tasks/%s/resolve", BasePath, id), Back: BasePath + "/refund-tasks"})
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
	if c.sentForApproval(w, r, res, err) {
		return
	}
	r.URL.RawQuery = ""
	if err != nil || res.JSON200 == nil {
		status := webkit.StatusOf(res, err)
		c.showRefundTasks(w, r, ss, status, "", webkit.APIError(status, webkit.BodyOf(res)))
		return
	}
	t := res.JSON200.Data
	http.Redirect(w, r, BasePath+"/refund-tasks?"+url.Values{"resolved": {t.Id.String()}, "as": {string(t.Status)}}.Encode(), http.StatusSeeOther)
}

// partnerDirectory lists the partners for a page that names them, with each
// name by id; when the operator API fails it shows the failure and reports false.
func (c *Console) partnerDirectory(w http.ResponseWriter, r *http.Request, ss *session) ([]oc.Partner, map[string]string, bool) {
	res, err := c.client(ss).ListPartnersWithResponse(r.Context())
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return nil, nil, false
	}
	same := map[string]int{}
	for _, p := range res.JSON200.Data {
		same[p.Name]++
	}
	names := make(map[string]string, len(res.JSON200.Data))
	for _, p := range res.JSON200.Data {
		names[p.Id.String()] = webkit.PartnerLabel(p.Name, p.Id.String(), same)
	}
	return res.JSON200.Data, names, true
}
