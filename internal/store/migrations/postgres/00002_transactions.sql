-- +goose Up
CREATE TABLE transactions (
    id                 uuid PRIMARY KEY,
    partner_id         uuid NOT NULL REFERENCES partners (id),
    merchant_reference text NOT NULL,
    -- Unicode case-folded merchant_reference, computed in Go so both databases
    -- fold the same way; uniqueness per partner is enforced here.
    reference_key      text NOT NULL,
    merchant_id        text,
    terminal_id        text,
    seller_phone       text,
    crypto_currency    text NOT NULL,
    network            text NOT NULL,
    crypto_amount      numeric(30, 6) NOT NULL,
    fiat_amount        numeric(20, 2) NOT NULL,
    rate               numeric(20, 2) NOT NULL,
    quote_id           uuid UNIQUE REFERENCES quotes (id),
    deposit_address    text NOT NULL,
    address_index      bigint NOT NULL,
    status             text NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    expires_at         timestamptz NOT NULL,
    CONSTRAINT transactions_reference_key UNIQUE (partner_id, reference_key),
    CONSTRAINT transactions_address_index UNIQUE (network, address_index)
);
-- Serves the keyset-paged list: partner scope, then (created_at, id) descending.
CREATE INDEX transactions_partner_created_idx ON transactions (partner_id, created_at DESC, id DESC);

-- One row per network: the next unused derivation index. Incremented in the
-- transaction that creates the deposit address, so an index is never handed out twice.
CREATE TABLE address_counters (
    network    text PRIMARY KEY,
    next_index bigint NOT NULL
);

CREATE TABLE status_history (
    id             bigserial PRIMARY KEY,
    transaction_id uuid NOT NULL REFERENCES transactions (id),
    from_status    text,
    to_status      text NOT NULL,
    reason         text NOT NULL,
    metadata       text,
    changed_at     timestamptz NOT NULL
);
CREATE INDEX status_history_transaction_idx ON status_history (transaction_id, id);

-- The outbox: one row per webhook event, written in the same database transaction
-- as the change it reports. payload is the exact JSON body that is delivered.
CREATE TABLE events (
    id             uuid PRIMARY KEY,
    partner_id     uuid NOT NULL REFERENCES partners (id),
    transaction_id uuid NOT NULL REFERENCES transactions (id),
    type           text NOT NULL,
    payload        text NOT NULL,
    created_at     timestamptz NOT NULL
);
CREATE INDEX events_partner_created_idx ON events (partner_id, created_at DESC, id DESC);
CREATE INDEX events_transaction_idx ON events (transaction_id);

CREATE TABLE idempotency_keys (
    partner_id      uuid NOT NULL REFERENCES partners (id),
    operation       text NOT NULL,
    key             text NOT NULL,
    fingerprint     text NOT NULL,
    state           text NOT NULL CHECK (state IN ('in_progress', 'done')),
    response_status integer,
    response_body   bytea,
    locked_at       timestamptz NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (partner_id, operation, key)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE events;
DROP TABLE status_history;
DROP TABLE address_counters;
DROP TABLE transactions;
