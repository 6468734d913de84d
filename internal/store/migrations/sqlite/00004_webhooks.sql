-- +goose Up
CREATE TABLE webhook_endpoints (
    partner_id                 TEXT PRIMARY KEY REFERENCES partners (id),
    url                        TEXT NOT NULL,
    enabled                    INTEGER NOT NULL,
    secret                     TEXT NOT NULL,
    previous_secret            TEXT,
    previous_secret_expires_at DATETIME,
    created_at                 DATETIME NOT NULL,
    updated_at                 DATETIME NOT NULL
);

ALTER TABLE events ADD COLUMN publish_status TEXT NOT NULL DEFAULT 'pending'
    CHECK (publish_status IN ('pending', 'delivered', 'failed'));
ALTER TABLE events ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN cycle_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN last_attempt_at DATETIME;
ALTER TABLE events ADD COLUMN next_attempt_at DATETIME;
ALTER TABLE events ADD COLUMN requeued INTEGER NOT NULL DEFAULT 0;
CREATE INDEX events_partner_status_idx ON events (partner_id, publish_status);
CREATE INDEX events_created_idx ON events (created_at);

CREATE TABLE webhook_attempts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id     TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    attempted_at DATETIME NOT NULL,
    status_code  INTEGER,
    duration_ms  INTEGER NOT NULL,
    error        TEXT
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
