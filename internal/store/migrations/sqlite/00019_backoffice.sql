-- +goose Up
-- Batches of the back office: one bank transfer paying a partner for many
-- transactions (payout), one liquidity order filling many (fill).
CREATE TABLE operator_batches (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('payout', 'fill')),
    partner_id    TEXT REFERENCES partners (id),
    reference     TEXT NOT NULL,
    rate          TEXT,
    fiat_amount   TEXT NOT NULL,
    crypto_amount TEXT NOT NULL,
    operator_id   TEXT NOT NULL REFERENCES operators (id),
    created_at    DATETIME NOT NULL
);
CREATE INDEX operator_batches_kind_created_idx ON operator_batches (kind, created_at DESC, id DESC);

-- A transaction is in at most one batch of each kind.
CREATE TABLE operator_batch_items (
    batch_id       TEXT NOT NULL REFERENCES operator_batches (id),
    kind           TEXT NOT NULL,
    transaction_id TEXT NOT NULL REFERENCES transactions (id),
    position       INTEGER NOT NULL,
    PRIMARY KEY (batch_id, transaction_id),
    UNIQUE (transaction_id, kind)
);

-- Every successful operator action, written in the action's own database transaction.
CREATE TABLE operator_audit (
    id                   TEXT PRIMARY KEY,
    operator_id          TEXT NOT NULL REFERENCES operators (id),
    action               TEXT NOT NULL,
    transaction_id       TEXT REFERENCES transactions (id),
    unmatched_deposit_id TEXT REFERENCES refund_tasks (id),
    batch_id             TEXT REFERENCES operator_batches (id),
    subject_id           TEXT,
    reference            text,
    created_at           DATETIME NOT NULL
);
CREATE INDEX operator_audit_created_idx ON operator_audit (created_at DESC, id DESC);
CREATE INDEX operator_audit_transaction_idx ON operator_audit (transaction_id, created_at DESC, id DESC);

-- API keys of partners and operators, several per owner: issued, rolled (the old
-- one expires after an overlap), revoked. Only the SHA-256 hash is stored.
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    owner_kind   TEXT NOT NULL CHECK (owner_kind IN ('partner', 'operator')),
    owner_id     TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    created_at   DATETIME NOT NULL,
    last_used_at DATETIME,
    expires_at   DATETIME,
    revoked_at   DATETIME
);
CREATE INDEX api_keys_owner_idx ON api_keys (owner_kind, owner_id, created_at DESC);
-- Every existing account keeps its key (its id doubles as the key's id).
INSERT INTO api_keys (id, owner_kind, owner_id, key_hash, prefix, created_at)
    SELECT id, 'partner', id, key_hash, CASE environment WHEN 'production' THEN 'sk_live_' ELSE 'sk_sandbox_' END, created_at FROM partners;
INSERT INTO api_keys (id, owner_kind, owner_id, key_hash, prefix, created_at)
    SELECT id, 'operator', id, key_hash, 'sk_op_', created_at FROM operators;

-- +goose Down
DROP TABLE api_keys;
DROP TABLE operator_audit;
DROP TABLE operator_batch_items;
DROP TABLE operator_batches;
