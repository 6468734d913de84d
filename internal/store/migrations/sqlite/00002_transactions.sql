-- +goose Up
CREATE TABLE transactions (
    id                 TEXT PRIMARY KEY,
    partner_id         TEXT NOT NULL REFERENCES partners (id),
    merchant_reference TEXT NOT NULL,
    reference_key      TEXT NOT NULL,
    merchant_id        TEXT,
    terminal_id        TEXT,
    seller_phone       TEXT,
    crypto_currency    TEXT NOT NULL,
    network            TEXT NOT NULL,
    crypto_amount      TEXT NOT NULL,
    fiat_amount        TEXT NOT NULL,
    rate               TEXT NOT NULL,
    quote_id           TEXT UNIQUE REFERENCES quotes (id),
    deposit_address    TEXT NOT NULL,
    address_index      INTEGER NOT NULL,
    status             TEXT NOT NULL,
    created_at         DATETIME NOT NULL,
    updated_at         DATETIME NOT NULL,
    expires_at         DATETIME NOT NULL,
    CONSTRAINT transactions_reference_key UNIQUE (partner_id, reference_key),
    CONSTRAINT transactions_address_index UNIQUE (network, address_index)
);
CREATE INDEX transactions_partner_created_idx ON transactions (partner_id, created_at DESC, id DESC);

CREATE TABLE address_counters (
    network    TEXT PRIMARY KEY,
    next_index INTEGER NOT NULL
);

CREATE TABLE status_history (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    transaction_id TEXT NOT NULL REFERENCES transactions (id),
    from_status    TEXT,
    to_status      TEXT NOT NULL,
    reason         TEXT NOT NULL,
    metadata       TEXT,
    changed_at     DATETIME NOT NULL
);
CREATE INDEX status_history_transaction_idx ON status_history (transaction_id, id);

CREATE TABLE events (
    id             TEXT PRIMARY KEY,
    partner_id     TEXT NOT NULL REFERENCES partners (id),
    transaction_id TEXT NOT NULL REFERENCES transactions (id),
    type           TEXT NOT NULL,
    payload        TEXT NOT NULL,
    created_at     DATETIME NOT NULL
);
CREATE INDEX events_partner_created_idx ON events (partner_id, created_at DESC, id DESC);
CREATE INDEX events_transaction_idx ON events (transaction_id);

CREATE TABLE idempotency_keys (
    partner_id      TEXT NOT NULL REFERENCES partners (id),
    operation       TEXT NOT NULL,
    key             TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('in_progress', 'done')),
    response_status INTEGER,
    response_body   BLOB,
    locked_at       DATETIME NOT NULL,
    created_at      DATETIME NOT NULL,
    expires_at      DATETIME NOT NULL,
    PRIMARY KEY (partner_id, operation, key)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE events;
DROP TABLE status_history;
DROP TABLE address_counters;
DROP TABLE transactions;
