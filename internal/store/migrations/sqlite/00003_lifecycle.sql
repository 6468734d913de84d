-- +goose Up
ALTER TABLE transactions ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE transactions ADD COLUMN payout_settled_at DATETIME;
CREATE INDEX transactions_awaiting_expiry_idx ON transactions (expires_at) WHERE status = 'awaiting_deposit';

CREATE TABLE deposits (
    transaction_id         TEXT PRIMARY KEY REFERENCES transactions (id),
    deposit_id             TEXT NOT NULL,
    status                 TEXT NOT NULL CHECK (status IN ('confirming', 'confirmed', 'failed', 'refunded')),
    confirmations          INTEGER NOT NULL,
    required_confirmations INTEGER NOT NULL,
    chain_hash             TEXT NOT NULL,
    amount                 TEXT NOT NULL,
    received_at            DATETIME NOT NULL,
    confirmed_at           DATETIME,
    updated_at             DATETIME NOT NULL
);

CREATE TABLE revenue (
    transaction_id     TEXT PRIMARY KEY REFERENCES transactions (id),
    partner_id         TEXT NOT NULL REFERENCES partners (id),
    merchant_reference TEXT NOT NULL,
    merchant_id        TEXT,
    terminal_id        TEXT,
    network            TEXT NOT NULL,
    crypto_currency    TEXT NOT NULL,
    crypto_amount      TEXT NOT NULL,
    amount             TEXT NOT NULL,
    platform_fee       TEXT NOT NULL,
    share              TEXT NOT NULL,
    ts                 DATETIME NOT NULL
);
CREATE INDEX revenue_partner_ts_idx ON revenue (partner_id, ts DESC, transaction_id DESC);

-- +goose Down
DROP TABLE revenue;
DROP TABLE deposits;
DROP INDEX transactions_awaiting_expiry_idx;
ALTER TABLE transactions DROP COLUMN payout_settled_at;
ALTER TABLE transactions DROP COLUMN version;
