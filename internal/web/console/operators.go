package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/web/webkit"
)

// operators lists the operator accounts (GET /operators), each linking to its keys.
func (c *Console) operators(w http.ResponseWriter, r *http.Request, ss *session) {
	res, err := c.client(ss).ListOperatorsWithResponse(r.Context())
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	c.site.Render(w, http.StatusOK, "operators", ss, map[string]any{"Title": "Operators", "Items": res.JSON200.Data, "Self": ss.Data.OperatorID})
}

func (c *Console) operatorPage(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	c.showOperator(w, r, ss, id, "")
}

// operatorName is operator id's name ("" when unknown).
func (c *Console) operatorName(r *http.Request, ss *session, id uuid.UUID) string {
	if res, err := c.client(ss).ListOperatorsWithResponse(r.Context()); err == nil && res.JSON200 != nil {
		for _, o := range res.JSON200.Data {
			if o.Id == id {
				return o.Name
			}
		}
	}
	return ""
}

// showOperator lists operator id's keys (GET /operators/{id}/keys), with a new
// key's secret shown once.
func (c *Console) showOperator(w http.ResponseWriter, r *http.Request, ss *session, id uuid.UUID, notice string) {
	res, err := c.client(ss).ListOperatorKeysWithResponse(r.Context(), id)
	if err != nil || res.JSON200 == nil {
		c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	if notice == "" {
		notice = revokedNotice(r, res.JSON200.Data)
	}
	name := c.operatorName(r, ss, id)
	data := map[string]any{"Title": "Operator " + webkit.IsolateText(name), "Name": name, "ID": id,
		"Self": id == ss.Data.OperatorID, "Keys": res.JSON200.Data, "Notice": notice}
	c.site.Opened(r, ss, data)
	c.site.Render(w, http.StatusOK, "operator", ss, data)
}

// operatorKeyAction adds, rolls or revokes an operator key, each after its
// confirmation page (the Idempotency-Key is made there, so a double submit replays).
func (c *Console) operatorKeyAction(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := c.site.PathID(w, r, ss)
	if !ok {
		return
	}
	op := r.PathValue("op")
	if op == "" {
		op = "add"
	}
	var kid uuid.UUID
	if op != "add" {
		var err error
		if kid, err = uuid.Parse(r.PathValue("kid")); err != nil {
			c.site.NotFound(w, ss)
			return
		}
	}
	f := r.PostForm
	target := fmt.Sprintf("%s/operators/%s/keys/%s/%s", BasePath, id, kid, op)
	if op == "add" {
		target = fmt.Sprintf("%s/operators/%s/keys/add", BasePath, id)
	}
	if f.Get("confirmed") != "yes" {
		name := c.operatorName(r, ss, id)
		words := map[string]string{"add": "Add an API key", "roll": "Roll the API key", "revoke": "Revoke the API key"}[op]
		if words == "" {
			c.site.NotFound(w, ss)
			return
		}
		subject := webkit.Sentence("Operator %s", name)
		if op != "add" {
			subject += webkit.Sentence(", key %s…", f.Get("prefix"))
		}
		if id == ss.Data.OperatorID && op == "revoke" {
			subject += ". This is your own account: a revoked key you signed in with ends this session."
		}
		c.confirm(w, ss, confirmation{Action: words, Subject: subject, Form: f, Target: target,
			Back: BasePath + "/operators/" + id.String()})
		return
	}
	cl := c.client(ss)
	key := f.Get("idempotency_key")
	switch op {
	case "add":
		res, err := cl.CreateOperatorKeyWithResponse(r.Context(), id, &oc.CreateOperatorKeyParams{IdempotencyKey: key}, make(oc.EmptyRequest))
		if err != nil || res.JSON200 == nil {
			c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
			return
		}
		c.site.ShowOnce(w, r, ss, "/operators/"+id.String(), map[string]string{"NewKey": res.JSON200.Data.Key, "Notice": "Key added."})
	case "roll":
		var req oc.RollRequest
		if overlap := strings.TrimSpace(f.Get("overlap")); overlap != "" {
			req.Overlap = &overlap
		}
		res, err := cl.RollOperatorKeyWithResponse(r.Context(), id, kid, &oc.RollOperatorKeyParams{IdempotencyKey: key}, req)
		if err != nil || res.JSON200 == nil {
			c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
			return
		}
		c.site.ShowOnce(w, r, ss, "/operators/"+id.String(), map[string]string{"NewKey": res.JSON200.Data.Key, "Notice": "Key rolled."})
	case "revoke":
		res, err := cl.RevokeOperatorKeyWithResponse(r.Context(), id, kid, &oc.RevokeOperatorKeyParams{IdempotencyKey: &key})
		if err != nil || res.JSON200 == nil {
			c.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
			return
		}
		http.Redirect(w, r, BasePath+"/operators/"+id.String()+"?"+url.Values{"revoked": {res.JSON200.Data.Prefix}}.Encode(), http.StatusSeeOther)
	default:
		c.site.NotFound(w, ss)
	}
}
