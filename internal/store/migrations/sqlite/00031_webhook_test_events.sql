-- +goose Up
-- What a receiver answered: the first 256 bytes of each attempt's response body, as
-- text (NULL when no response arrived, and for attempts made before this column).
-- A test event (POST /webhooks/endpoint/test) belongs to no transaction, so
-- events.transaction_id may be NULL. SQLite cannot relax NOT NULL in place: events is
-- rebuilt, and webhook_attempts, which references it, with it (its rows kept aside
-- first: dropping a referenced table deletes, and cascades, like DELETE FROM).
CREATE TABLE webhook_attempts_kept AS SELECT id, event_id, attempted_at, status_code, duration_ms, error FROM webhook_attempts;
DROP TABLE webhook_attempts;

CREATE TABLE events_new (
    id              TEXT PRIMARY KEY,
    partner_id      TEXT NOT NULL REFERENCES partners (id),
    transaction_id  TEXT REFERENCES transactions (id),
    type            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    created_at      DATETIME NOT NULL,
    publish_status  TEXT NOT NULL DEFAULT 'pending' CHECK (publish_status IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    cycle_attempts  INTEGER NOT NULL DEFAULT 0,
    last_attempt_at DATETIME,
    next_attempt_at DATETIME,
    requeued        INTEGER NOT NULL DEFAULT 0
);
INSERT INTO events_new (id, partner_id, transaction_id, type, payload, created_at, publish_status, attempts,
    cycle_attempts, last_attempt_at, next_attempt_at, requeued)
    SELECT id, partner_id, transaction_id, type, payload, created_at, publish_status, attempts,
    cycle_attempts, last_attempt_at, next_attempt_at, requeued FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_partner_created_idx ON events (partner_id, created_at DESC, id DESC);
CREATE INDEX events_transaction_idx ON events (transaction_id);
CREATE INDEX events_partner_status_idx ON events (partner_id, publish_status);
CREATE INDEX events_created_idx ON events (created_at);

CREATE TABLE webhook_attempts (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id         TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    attempted_at     DATETIME NOT NULL,
    status_code      INTEGER,
    duration_ms      INTEGER NOT NULL,
    error            TEXT,
    response_excerpt TEXT
);
INSERT INTO webhook_attempts (id, event_id, attempted_at, status_code, duration_ms, error)
    SELECT id, event_id, attempted_at, status_code, duration_ms, error FROM webhook_attempts_kept;
DROP TABLE webhook_attempts_kept;
CREATE INDEX webhook_attempts_event_idx ON webhook_attempts (event_id, id);

-- +goose Down
CREATE TABLE webhook_attempts_kept AS SELECT a.id, a.event_id, a.attempted_at, a.status_code, a.duration_ms, a.error
    FROM webhook_attempts a JOIN events e ON e.id = a.event_id WHERE e.transaction_id IS NOT NULL;
DROP TABLE webhook_attempts;
CREATE TABLE events_old (
    id              TEXT PRIMARY KEY,
    partner_id      TEXT NOT NULL REFERENCES partners (id),
    transaction_id  TEXT NOT NULL REFERENCES transactions (id),
    type            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    created_at      DATETIME NOT NULL,
    publish_status  TEXT NOT NULL DEFAULT 'pending' CHECK (publish_status IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    cycle_attempts  INTEGER NOT NULL DEFAULT 0,
    last_attempt_at DATETIME,
    next_attempt_at DATETIME,
    requeued        INTEGER NOT NULL DEFAULT 0
);
INSERT INTO events_old SELECT id, partner_id, transaction_id, type, payload, created_at, publish_status, attempts,
    cycle_attempts, last_attempt_at, next_attempt_at, requeued FROM events WHERE transaction_id IS NOT NULL;
DROP TABLE events;
ALTER TABLE events_old RENAME TO events;
CREATE INDEX events_partner_created_idx ON events (partner_id, created_at DESC, id DESC);
CREATE INDEX events_transaction_idx ON events (transaction_id);
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
INSERT INTO webhook_attempts SELECT * FROM webhook_attempts_kept;
DROP TABLE webhook_attempts_kept;
CREATE INDEX webhook_attempts_event_idx ON webhook_attempts (event_id, id);
