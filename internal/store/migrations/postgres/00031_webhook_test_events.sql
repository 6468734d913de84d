-- +goose Up
-- What a receiver answered: the first 256 bytes of each attempt's response body, as
-- text (NULL when no response arrived, and for attempts made before this column).
ALTER TABLE webhook_attempts ADD COLUMN response_excerpt text;
-- A test event (POST /webhooks/endpoint/test) belongs to no transaction.
ALTER TABLE events ALTER COLUMN transaction_id DROP NOT NULL;

-- +goose Down
DELETE FROM webhook_attempts WHERE event_id IN (SELECT id FROM events WHERE transaction_id IS NULL);
DELETE FROM events WHERE transaction_id IS NULL;
ALTER TABLE events ALTER COLUMN transaction_id SET NOT NULL;
ALTER TABLE webhook_attempts DROP COLUMN response_excerpt;
