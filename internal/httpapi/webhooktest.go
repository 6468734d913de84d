package httpapi

import (
	"context"

	"partnerd/gen/api"
	"partnerd/internal/httpkit"
	"partnerd/internal/webhook"
)

// SendTestWebhookEvent emits a test event to the partner's endpoint (202): a
// receiver is checked end to end, through the outbox, without a transaction.
func (s *Server) SendTestWebhookEvent(ctx context.Context, _ api.SendTestWebhookEventRequestObject) (api.SendTestWebhookEventResponseObject, error) {
	p, err := partnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	answer := func(ev *webhook.Event) api.SendTestWebhookEventResponseObject {
		msg := "Test event queued for delivery."
		return api.SendTestWebhookEvent202JSONResponse{Body: api.WebhookEventResponse{Success: true, Message: &msg, Data: eventOut(ev)}}
	}
	key := httpkit.KeyedBy[webhook.Tx](ctx, s.keys, answer, api.SendTestWebhookEventResponseObject.VisitSendTestWebhookEventResponse)
	ev, err := s.endpoints.SendTest(ctx, key, actorOf(ctx, p), p.ID)
	if err != nil {
		return nil, err
	}
	return answer(ev), nil
}

// eventOut maps an event to its event-log entry.
func eventOut(ev *webhook.Event) api.WebhookEvent {
	return api.WebhookEvent{
		EventId: ev.ID, EventType: api.WebhookEventType(ev.Type), AggregateId: ev.TransactionID, CreatedAt: ev.CreatedAt,
		Attempts: ev.Attempts, PublishStatus: api.PublishStatus(ev.PublishStatus),
		LastAttemptAt: ev.LastAttemptAt, NextAttemptAt: ev.NextAttemptAt, Test: ev.Test(),
	}
}
