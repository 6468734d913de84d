-- +goose Up
-- Batches of the back office: one bank transfer paying a partner for many
-- transactions (payout), one liquidity order filling many (fill).
CREATE TABLE operator_batches (
    id            uuid PRIMARY KEY,
    kind          text NOT NULL CHECK (kind IN ('payout', 'fill')),
    partner_id    uuid REFERENCES partners (id),
    reference     text NOT NULL,
    rate          numeric(20, 2),
    fiat_amount   numeric(20, 2) NOT NULL,
    crypto_amount numeric(30, 6) NOT NULL,
    operator_id   uuid NOT NULL REFERENCES operators (id),
    created_at    timestamptz NOT NULL
);
CREATE INDEX operator_batches_kind_created_idx ON operator_batches (kind, created_at DESC, id DESC);

-- A transaction is in at most one batch of each kind.
CREATE TABLE operator_batch_items (
    batch_id       uuid NOT NULL REFERENCES operator_batches (id),
    kind           text NOT NULL,
    transaction_id uuid NOT NULL REFERENCES transactions (id),
    position       integer NOT NULL,
    PRIMARY KEY (batch_id, transaction_id),
    UNIQUE (transaction_id, kind)
);

-- Every successful operator action, written in the action's own database transaction.
CREATE TABLE operator_audit (
    id                   uuid PRIMARY KEY,
    operator_id          uuid NOT NULL REFERENCES operators (id),
    action               text NOT NULL,
    transaction_id       uuid REFERENCES transactions (id),
    unmatched_deposit_id uuid REFERENCES unmatched_deposits (id),
    batch_id             uuid REFERENCES operator_batches (id),
    reference            text,
    created_at           timestamptz NOT NULL
);
CREATE INDEX operator_audit_created_idx ON operator_audit (created_at DESC, id DESC);
CREATE INDEX operator_audit_transaction_idx ON operator_audit (transaction_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE operator_audit;
DROP TABLE operator_batch_items;
DROP TABLE operator_batches;
