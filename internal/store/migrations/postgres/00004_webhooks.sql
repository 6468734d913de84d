-- +goose Up
-- One webhook endpoint per partner. The signing secrets are kept in the clear:
-- signing needs them (only their owner and this service ever see them).
CREATE TABLE webhook_endpoints (
    partner_id                 uuid PRIMARY KEY REFERENCES partners (id),
    url                        text NOT NULL,
    enabled                    boolean NOT NULL,
    secret                     text NOT NULL,
    previous_secret            text,
    previous_secret_expires_at timestamptz,
    created_at                 timestamptz NOT NULL,
    updated_at                 timestamptz NOT NULL
);

-- Delivery state of each outbox event.
ALTER TABLE events ADD COLUMN publish_status text NOT NULL DEFAULT 'pending'
    CHECK (publish_status IN ('pending', 'delivered', 'failed'));
ALTER TABLE events ADD COLUMN attempts integer NOT NULL DEFAULT 0;
-- Attempts since the event was last queued (created, replayed or released by an
-- endpoint being enabled); the retry schedule counts these.
ALTER TABLE events ADD COLUMN cycle_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN last_attempt_at timestamptz;
ALTER TABLE events ADD COLUMN next_attempt_at timestamptz;
-- Set by a replay or by enabling an endpoint; the delivery job clears it when it
-- starts an attempt, and runs once more if it was set again meanwhile, so a requeue
-- is never lost to a job that is just finishing and never runs beside it.
ALTER TABLE events ADD COLUMN requeued boolean NOT NULL DEFAULT false;
CREATE INDEX events_partner_status_idx ON events (partner_id, publish_status);
CREATE INDEX events_created_idx ON events (created_at);

CREATE TABLE webhook_attempts (
    id           bigserial PRIMARY KEY,
    event_id     uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    attempted_at timestamptz NOT NULL,
    status_code  integer,
    duration_ms  integer NOT NULL,
    error        text
);
CREATE INDEX webhook_attempts_event_idx ON webhook_attempts (event_id, id);

-- +goose Down
DROP TABLE webhook_attempts;
DROP INDEX events_created_idx;
DROP INDEX events_partner_status_idx;
ALTER TABLE events DROP COLUMN requeued;
ALTER TABLE events DROP COLUMN next_attempt_at;
ALTER TABLE events DROP COLUMN last_attempt_at;
ALTER TABLE events DROP COLUMN cycle_attempts;
ALTER TABLE events DROP COLUMN attempts;
ALTER TABLE events DROP COLUMN publish_status;
DROP TABLE webhook_endpoints;
