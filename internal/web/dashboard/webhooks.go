package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	pc "partnerd/gen/client"
	"partnerd/internal/web/webkit"
	"partnerd/internal/webhook"
)

// webhookRoutes mounts the webhook pages (the endpoint, events and their
// delivery attempts): roles webhookRoles. Every read and change is a partner
// API call in process, a change under its form's Idempotency-Key.
func (d *Dashboard) webhookRoutes(mux *http.ServeMux) {
	b := BasePath
	mux.HandleFunc("GET "+b+"/webhooks", d.allow(d.webhooks, webhookRoles...))
	mux.HandleFunc("POST "+b+"/webhooks/endpoint", d.allow(d.saveEndpoint, webhookRoles...))
	mux.HandleFunc("POST "+b+"/webhooks/rotate", d.allow(d.rotateSecret, webhookRoles...))
	mux.HandleFunc("POST "+b+"/webhooks/test", d.allow(d.sendTest, webhookRoles...))
	mux.HandleFunc("POST "+b+"/webhooks/replay", d.allow(d.replaySelection, webhookRoles...))
	mux.HandleFunc("GET "+b+"/webhooks/events/{id}", d.allow(d.webhookEvent, webhookRoles...))
	mux.HandleFunc("POST "+b+"/webhooks/events/{id}/replay", d.allow(d.replayEvent, webhookRoles...))
}

// publishStatuses are the delivery states the events list filters by.
var publishStatuses = []pc.PublishStatus{pc.PublishStatusPending, pc.PublishStatusDelivered, pc.PublishStatusFailed}

func (d *Dashboard) webhooks(w http.ResponseWriter, r *http.Request, ss *session) {
	q := r.URL.Query()
	extra := map[string]any{}
	if n := q.Get("replayed"); n != "" {
		extra["Notice"] = n + " event(s) queued for redelivery; each attempt appears on the event's page."
	}
	if q.Get("saved") != "" {
		extra["Notice"] = "The endpoint is saved."
	}
	d.showWebhooks(w, r, ss, http.StatusOK, extra)
}

// showWebhooks renders the endpoint and the event log (filtered by the query's
// publish status, paged by its cursor) with extra data (an outcome, a secret
// shown once).
func (d *Dashboard) showWebhooks(w http.ResponseWriter, r *http.Request, ss *session, status int, extra map[string]any) {
	ctx, cl := r.Context(), d.client(ss)
	data := map[string]any{"Title": "Webhooks", "Section": "webhooks", "Statuses": publishStatuses,
		"EndpointKey": formKey(), "RotateKey": formKey(), "TestKey": formKey(), "ReplayKey": formKey()}
	ep, err := cl.GetWebhookEndpointWithResponse(ctx)
	switch {
	case err == nil && ep.JSON200 != nil:
		data["Endpoint"] = ep.JSON200.Data
		data["EveryEvent"] = len(ep.JSON200.Data.EnabledEvents) == len(webhook.EventTypes)
		if x := ep.JSON200.Data.PreviousSecretExpiresAt; x != nil && x.After(d.d.Now()) {
			data["Window"] = *x
		}
	case err == nil && ep.StatusCode() == http.StatusNotFound:
	default:
		d.site.Failed(w, ss, webkit.StatusOf(ep, err), webkit.BodyOf(ep))
		return
	}
	q := r.URL.Query()
	limit := 50
	p := &pc.ListWebhookEventsParams{Limit: &limit}
	if s := q.Get("status"); s != "" {
		st := pc.PublishStatus(s)
		p.PublishStatus = &st
		data["Status"] = s
	}
	if c := q.Get("cursor"); c != "" {
		p.Cursor = &c
	}
	evs, err := cl.ListWebhookEventsWithResponse(ctx, p)
	if err != nil || evs.JSON200 == nil {
		d.listRefused(w, ss, "webhooks", data, evs, err)
		return
	}
	data["Events"] = evs.JSON200.Data.Data
	data["References"] = d.references(ctx, cl, evs.JSON200.Data.Data)
	if next := evs.JSON200.Data.NextCursor; next != nil {
		v := url.Values{"cursor": {*next}}
		if s := q.Get("status"); s != "" {
			v.Set("status", s)
		}
		data["Next"] = BasePath + "/webhooks?" + v.Encode()
	}
	d.site.Opened(r, ss, data)
	for k, v := range extra {
		data[k] = v
	}
	d.site.Render(w, status, "webhooks", ss, data)
}

// saveEndpoint registers or updates the endpoint (PUT /webhooks/endpoint); the
// first registration shows the signing secret, once.
func (d *Dashboard) saveEndpoint(w http.ResponseWriter, r *http.Request, ss *session) {
	key := idempotencyKey(r)
	body := pc.WebhookEndpointRequest{Url: strings.TrimSpace(r.PostFormValue("url")), Enabled: r.PostFormValue("enabled") != ""}
	res, err := d.client(ss).PutWebhookEndpointWithResponse(background(r.Context()), &pc.PutWebhookEndpointParams{IdempotencyKey: &key}, body)
	if err != nil || res.JSON200 == nil {
		d.webhookRefused(w, r, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	d.d.Logger.Info("dashboard webhook endpoint saved", "partner_id", ss.Data.PartnerID.String(), "user_id", ss.Data.UserID.String(),
		"enabled", body.Enabled)
	if s := res.JSON200.Data.SigningSecret; s != nil {
		d.site.ShowOnce(w, r, ss, "/webhooks", map[string]string{"Secret": *s,
			"Notice": "The endpoint is registered. Its signing secret is shown below, only now."})
		return
	}
	http.Redirect(w, r, BasePath+"/webhooks?saved=1", http.StatusSeeOther)
}

// webhookRefused shows a refused webhook change on the webhooks page (the API's
// words; nothing changed), or the 404 page.
func (d *Dashboard) webhookRefused(w http.ResponseWriter, r *http.Request, ss *session, status int, body []byte) {
	switch status {
	case http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity:
		d.showWebhooks(w, r, ss, status, map[string]any{"Error": webkit.APIError(status, body)})
	default:
		d.site.Failed(w, ss, status, body)
	}
}

// rotateSecret replaces the signing secret: the new one is shown once, and the
// old one keeps signing beside it for the dual-signing window.
func (d *Dashboard) rotateSecret(w http.ResponseWriter, r *http.Request, ss *session) {
	key := idempotencyKey(r)
	res, err := d.client(ss).RotateWebhookSecretWithResponse(background(r.Context()), &pc.RotateWebhookSecretParams{IdempotencyKey: &key})
	if err != nil || res.JSON200 == nil {
		if webkit.StatusOf(res, err) == http.StatusNotFound {
			d.showWebhooks(w, r, ss, http.StatusNotFound, map[string]any{"Error": "Register an endpoint first."})
			return
		}
		d.webhookRefused(w, r, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	d.d.Logger.Info("dashboard webhook secret rotated", "partner_id", ss.Data.PartnerID.String(), "user_id", ss.Data.UserID.String())
	shown := map[string]string{"Notice": "The signing secret is rotated. The new secret is shown below, only now."}
	if s := res.JSON200.Data.SigningSecret; s != nil {
		shown["Secret"] = *s
	}
	d.site.ShowOnce(w, r, ss, "/webhooks", shown)
}

// sendTest emits a test event and opens its page, where its attempts appear.
func (d *Dashboard) sendTest(w http.ResponseWriter, r *http.Request, ss *session) {
	key := idempotencyKey(r)
	res, err := d.client(ss).SendTestWebhookEventWithResponse(background(r.Context()), &pc.SendTestWebhookEventParams{IdempotencyKey: key})
	if err != nil || res.JSON202 == nil {
		if webkit.StatusOf(res, err) == http.StatusNotFound {
			d.showWebhooks(w, r, ss, http.StatusNotFound, map[string]any{"Error": "Register an endpoint first."})
			return
		}
		d.webhookRefused(w, r, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	http.Redirect(w, r, BasePath+"/webhooks/events/"+res.JSON202.Data.EventId.String()+"?sent=1", http.StatusSeeOther)
}

// replaySelection replays the checked events, each under its own key derived
// from the form's (a resent form replays nothing twice). An id of no event of
// the partner (another partner's included) is the 404 page; the ones before it
// were replayed.
func (d *Dashboard) replaySelection(w http.ResponseWriter, r *http.Request, ss *session) {
	key := idempotencyKey(r)
	if err := r.ParseForm(); err != nil {
		d.showWebhooks(w, r, ss, http.StatusBadRequest, map[string]any{"Error": "The form could not be read."})
		return
	}
	picked := r.PostForm["event_id"]
	if len(picked) == 0 {
		d.showWebhooks(w, r, ss, http.StatusBadRequest, map[string]any{"Error": "Check the events to replay first."})
		return
	}
	if len(picked) > 100 {
		d.showWebhooks(w, r, ss, http.StatusBadRequest, map[string]any{"Error": "Replay at most 100 events at once."})
		return
	}
	cl := d.client(ss)
	for _, s := range picked {
		id, err := uuid.Parse(s)
		if err != nil {
			d.site.NotFound(w, ss)
			return
		}
		k := key + "/" + id.String()
		if len(k) > 255 {
			k = formKey()
		}
		res, err := cl.ReplayWebhookEventWithResponse(background(r.Context()), id, &pc.ReplayWebhookEventParams{IdempotencyKey: &k})
		if err != nil || res.JSON202 == nil {
			d.webhookRefused(w, r, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
			return
		}
	}
	d.d.Logger.Info("dashboard webhook events replayed", "partner_id", ss.Data.PartnerID.String(), "user_id", ss.Data.UserID.String(),
		"events", len(picked))
	http.Redirect(w, r, BasePath+"/webhooks?replayed="+strconv.Itoa(len(picked)), http.StatusSeeOther)
}

// webhookEvent shows one event: its payload (the JSON delivered, its fields in
// the API's order) and every delivery attempt (time, status, latency, the start
// of the receiver's answer).
func (d *Dashboard) webhookEvent(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := d.site.PathID(w, r, ss)
	if !ok {
		return
	}
	res, err := d.client(ss).GetWebhookEventWithResponse(r.Context(), id)
	if err != nil || res.JSON200 == nil {
		d.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	ev := res.JSON200.Data
	payload, _ := json.MarshalIndent(ev.Payload, "", "  ")
	attempts := make([]attemptView, len(ev.DeliveryAttempts))
	for i, a := range ev.DeliveryAttempts {
		attempts[i] = attemptView{N: i + 1, When: a.AttemptedAt, LatencyMS: a.DurationMs}
		if a.StatusCode != nil {
			attempts[i].Status, attempts[i].Answered, attempts[i].OK = *a.StatusCode, true, *a.StatusCode >= 200 && *a.StatusCode < 300
		}
		if a.Error != nil {
			attempts[i].Error, attempts[i].Words = *a.Error, "The delivery did not reach your endpoint."
			if attempts[i].Answered {
				attempts[i].Words = "Your endpoint did not answer with success."
			}
		}
		if a.ResponseExcerpt != nil {
			attempts[i].Excerpt, attempts[i].HasExcerpt = *a.ResponseExcerpt, true
		}
	}
	data := map[string]any{"Title": "Webhook event " + string(ev.EventType), "Section": "webhooks", "E": ev,
		"Attempts": attempts, "Payload": string(payload), "ReplayKey": formKey()}
	switch {
	case r.URL.Query().Get("sent") != "":
		data["Notice"] = "Test event sent: its attempts appear below (reload to follow them)."
	case r.URL.Query().Get("replayed") != "":
		data["Notice"] = "Queued for redelivery: the new attempt appears below (reload to follow it)."
	}
	d.site.Render(w, http.StatusOK, "webhook_event", ss, data)
}

// attemptView is one delivery attempt as the event's page shows it.
type attemptView struct {
	N                        int
	When                     time.Time
	Status                   int
	Answered, OK, HasExcerpt bool
	LatencyMS                int
	// Error is the delivery's raw error, folded beneath Words, what it means.
	Error, Words, Excerpt string
}

// replayEvent replays one event and comes back to its page.
func (d *Dashboard) replayEvent(w http.ResponseWriter, r *http.Request, ss *session) {
	id, ok := d.site.PathID(w, r, ss)
	if !ok {
		return
	}
	key := idempotencyKey(r)
	res, err := d.client(ss).ReplayWebhookEventWithResponse(background(r.Context()), id, &pc.ReplayWebhookEventParams{IdempotencyKey: &key})
	if err != nil || res.JSON202 == nil {
		d.site.Failed(w, ss, webkit.StatusOf(res, err), webkit.BodyOf(res))
		return
	}
	d.d.Logger.Info("dashboard webhook event replayed", "partner_id", ss.Data.PartnerID.String(), "user_id", ss.Data.UserID.String(),
		"event_id", id.String())
	http.Redirect(w, r, BasePath+"/webhooks/events/"+id.String()+"?replayed=1", http.StatusSeeOther)
}

// references are the merchant references of the transactions events are about
// (each read once, a page holds at most 50 events), so the list names them as
// the partner does; one that cannot be read is shown by its id.
func (d *Dashboard) references(ctx context.Context, cl *pc.ClientWithResponses, events []pc.WebhookEvent) map[uuid.UUID]string {
	out := map[uuid.UUID]string{}
	for _, e := range events {
		if e.Test {
			continue
		}
		if _, done := out[e.AggregateId]; done {
			continue
		}
		out[e.AggregateId] = ""
		if res, err := cl.GetTransactionWithResponse(ctx, e.AggregateId); err == nil && res.JSON200 != nil {
			out[e.AggregateId] = res.JSON200.Data.MerchantReference
		}
	}
	return out
}
