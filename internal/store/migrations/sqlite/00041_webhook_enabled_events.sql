-- +goose Up
-- The event types a partner's webhook endpoint receives (PUT /webhooks/endpoint,
-- enabled_events): their names, comma-separated, in the order of the contract's
-- WebhookEventType; NULL receives every type (an endpoint registered without a
-- list, and every endpoint registered before this column).
ALTER TABLE webhook_endpoints ADD COLUMN enabled_events text;

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN enabled_events;
