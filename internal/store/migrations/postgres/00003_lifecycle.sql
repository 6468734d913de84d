-- +goose Up
ALTER TABLE transactions ADD COLUMN version bigint NOT NULL DEFAULT 0;
ALTER TABLE transactions ADD COLUMN payout_settled_at timestamptz;
-- The expiry sweep looks for awaiting transactions past their deadline.
CREATE INDEX transactions_awaiting_expiry_idx ON transactions (expires_at) WHERE status = 'awaiting_deposit';

-- One deposit per transaction, created on detection and advanced by confirmations.
CREATE TABLE deposits (
    transaction_id         uuid PRIMARY KEY REFERENCES transactions (id),
    deposit_id             text NOT NULL,
    status                 text NOT NULL CHECK (status IN ('confirming', 'confirmed', 'failed', 'refunded')),
    confirmations          integer NOT NULL,
    required_confirmations integer NOT NULL,
    chain_hash             text NOT NULL,
    amount                 numeric(30, 6) NOT NULL,
    received_at            timestamptz NOT NULL,
    confirmed_at           timestamptz,
    updated_at             timestamptz NOT NULL
);

-- The revenue ledger: one row per completed transaction, written with the completion.
CREATE TABLE revenue (
    transaction_id     uuid PRIMARY KEY REFERENCES transactions (id),
    partner_id         uuid NOT NULL REFERENCES partners (id),
    merchant_reference text NOT NULL,
    merchant_id        text,
    terminal_id        text,
    network            text NOT NULL,
    crypto_currency    text NOT NULL,
    crypto_amount      numeric(30, 6) NOT NULL,
    amount             numeric(20, 2) NOT NULL,
    platform_fee       numeric(20, 2) NOT NULL,
    share              numeric(20, 2) NOT NULL,
    ts                 timestamptz NOT NULL
);
CREATE INDEX revenue_partner_ts_idx ON revenue (partner_id, ts DESC, transaction_id DESC);

-- +goose Down
DROP TABLE revenue;
DROP TABLE deposits;
DROP INDEX transactions_awaiting_expiry_idx;
ALTER TABLE transactions DROP COLUMN payout_settled_at;
ALTER TABLE transactions DROP COLUMN version;
