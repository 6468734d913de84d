package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"partnerd/gen/api"
	"partnerd/internal/httpkit"
	"partnerd/internal/webhook"
)

// GetWebhookEndpoint returns the partner's endpoint; the secret is never shown here.
func (s *Server) GetWebhookEndpoint(ctx context.Context, _ api.GetWebhookEndpointRequestObject) (api.GetWebhookEndpointResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	e, err := s.endpoints.Get(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	return api.GetWebhookEndpoint200JSONResponse{WebhookEndpointOKJSONResponse: endpointOut(e, "")}, nil
}

// PutWebhookEndpoint registers or updates the endpoint; the first registration
// returns the new signing secret, once.
func (s *Server) PutWebhookEndpoint(ctx context.Context, req api.PutWebhookEndpointRequestObject) (api.PutWebhookEndpointResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(r webhook.Registered) api.PutWebhookEndpointResponseObject {
		return api.PutWebhookEndpoint200JSONResponse{WebhookEndpointOKJSONResponse: endpointOut(r.Endpoint, r.Secret)}
	}
	key := httpkit.KeyedBy[webhook.Tx](ctx, s.keys, answer, api.PutWebhookEndpointResponseObject.VisitPutWebhookEndpointResponse)
	var events *[]string
	if req.Body.EnabledEvents != nil {
		evs := make([]string, len(*req.Body.EnabledEvents))
		for i, t := range *req.Body.EnabledEvents {
			evs[i] = string(t)
		}
		events = &evs
	}
	e, secret, err := s.endpoints.Put(ctx, key, actorOf(ctx, p), p.ID, req.Body.Url, req.Body.Enabled, events)
	if err != nil {
		return nil, err
	}
	return answer(webhook.Registered{Endpoint: e, Secret: secret}), nil
}

// RotateWebhookSecret replaces the signing secret and returns the new one, once.
func (s *Server) RotateWebhookSecret(ctx context.Context, _ api.RotateWebhookSecretRequestObject) (api.RotateWebhookSecretResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(r webhook.Registered) api.RotateWebhookSecretResponseObject {
		return api.RotateWebhookSecret200JSONResponse{WebhookEndpointOKJSONResponse: endpointOut(r.Endpoint, r.Secret)}
	}
	key := httpkit.KeyedBy[webhook.Tx](ctx, s.keys, answer, api.RotateWebhookSecretResponseObject.VisitRotateWebhookSecretResponse)
	e, secret, err := s.endpoints.Rotate(ctx, key, actorOf(ctx, p), p.ID)
	if err != nil {
		return nil, err
	}
	return answer(webhook.Registered{Endpoint: e, Secret: secret}), nil
}

func endpointOut(e *webhook.Endpoint, secret string) api.WebhookEndpointOKJSONResponse {
	types := webhook.EventsOf(e)
	events := make([]api.WebhookEventType, len(types))
	for i, t := range types {
		events[i] = api.WebhookEventType(t)
	}
	out := api.WebhookEndpoint{Url: e.URL, Enabled: e.Enabled, EnabledEvents: events, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
	if secret != "" {
		out.SigningSecret = &secret
	}
	if e.PreviousSecret != nil {
		out.PreviousSecretExpiresAt = e.PreviousSecretExpiresAt
	}
	return api.WebhookEndpointOKJSONResponse{Success: true, Data: out}
}

// ListWebhookEvents returns a page of the event log.
func (s *Server) ListWebhookEvents(ctx context.Context, req api.ListWebhookEventsRequestObject) (api.ListWebhookEventsResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	q := req.Params
	f := webhook.Filter{TransactionID: q.TransactionId, From: q.From, To: q.To}
	if q.EventType != nil {
		t := string(*q.EventType)
		f.Type = &t
	}
	if q.PublishStatus != nil {
		st := string(*q.PublishStatus)
		f.PublishStatus = &st
	}
	limit, after := httpkit.PageParams(q.Limit, q.Cursor)
	page, err := s.events.List(ctx, p.ID, f, limit, after)
	if err != nil {
		return nil, err
	}
	items := make([]api.WebhookEvent, len(page.Events))
	for i, ev := range page.Events {
		items[i] = eventOut(ev)
	}
	return api.ListWebhookEvents200JSONResponse{Success: true, Data: api.WebhookEventPage{
		Data: items, HasMore: page.HasMore, Limit: page.Limit, NextCursor: page.NextCursor,
	}}, nil
}

// GetWebhookEvent returns an event with the exact payload it delivers and its attempts.
func (s *Server) GetWebhookEvent(ctx context.Context, req api.GetWebhookEventRequestObject) (api.GetWebhookEventResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	ev, attempts, err := s.events.Get(ctx, p.ID, req.EventId)
	if err != nil {
		return nil, err
	}
	var payload api.WebhookPayload
	if err := json.Unmarshal(ev.Payload, &payload); err != nil {
		return nil, fmt.Errorf("decode stored payload of event %s: %w", ev.ID, err)
	}
	out := api.WebhookEventDetail{
		EventId: ev.ID, EventType: api.WebhookEventType(ev.Type), AggregateId: ev.TransactionID, CreatedAt: ev.CreatedAt,
		Attempts: ev.Attempts, PublishStatus: api.PublishStatus(ev.PublishStatus),
		LastAttemptAt: ev.LastAttemptAt, NextAttemptAt: ev.NextAttemptAt, Test: ev.Test(), Payload: payload,
		DeliveryAttempts: make([]api.WebhookAttempt, len(attempts)),
	}
	for i, a := range attempts {
		out.DeliveryAttempts[i] = api.WebhookAttempt{AttemptedAt: a.AttemptedAt, StatusCode: a.StatusCode, DurationMs: a.DurationMS,
			Error: a.Error, ResponseExcerpt: a.ResponseExcerpt}
	}
	return api.GetWebhookEvent200JSONResponse{Success: true, Data: out}, nil
}

// ReplayWebhookEvent requeues an event with the same id and payload (202).
func (s *Server) ReplayWebhookEvent(ctx context.Context, req api.ReplayWebhookEventRequestObject) (api.ReplayWebhookEventResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(q webhook.Requeued) api.ReplayWebhookEventResponseObject {
		return replayOut(q.Event, q.Replayed)
	}
	key := httpkit.KeyedBy[webhook.Tx](ctx, s.keys, answer, api.ReplayWebhookEventResponseObject.VisitReplayWebhookEventResponse)
	ev, r, err := s.events.Replay(ctx, key, actorOf(ctx, p), p.ID, req.EventId)
	if err != nil {
		return nil, err
	}
	return answer(webhook.Requeued{Event: ev, Replayed: r}), nil
}

// replayOut is the answer to a replay: the event, and when its redelivery is due.
func replayOut(ev *webhook.Event, r webhook.Replayed) api.ReplayWebhookEventResponseObject {
	msg := "Event queued for redelivery."
	if r.InProgressSince != nil {
		msg = fmt.Sprintf("A delivery attempt of this event has been in progress since %s; the event is delivered again "+
			"when it ends, at the latest by %s (an attempt interrupted by a restart is retried by then).",
			r.InProgressSince.Format(time.RFC3339), r.ScheduledAt.Format(time.RFC3339))
	}
	return api.ReplayWebhookEvent202JSONResponse{Success: true, Message: &msg, Data: api.WebhookReplay{
		EventId: ev.ID, EventType: api.WebhookEventType(ev.Type), AggregateId: ev.TransactionID,
		Attempts: ev.Attempts, PublishStatus: api.PublishStatus(ev.PublishStatus), ReplayScheduledAt: r.ScheduledAt,
		InProgressSince: r.InProgressSince,
	}}
}
