-- +goose Up
-- Back-office operators and their API keys (sk_op_…, stored as SHA-256 hashes).
CREATE TABLE operators (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    key_hash   TEXT NOT NULL UNIQUE,
    created_at DATETIME NOT NULL
);

-- Idempotency keys of operator requests: the partner table's shape, owned by an operator.
CREATE TABLE operator_idempotency_keys (
    operator_id     TEXT NOT NULL REFERENCES operators (id),
    operation       TEXT NOT NULL,
    key             TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('in_progress', 'done')),
    response_status INTEGER,
    response_body   BLOB,
    locked_at       DATETIME NOT NULL,
    created_at      DATETIME NOT NULL,
    expires_at      DATETIME NOT NULL,
    PRIMARY KEY (operator_id, operation, key)
);
CREATE INDEX operator_idempotency_keys_expires_idx ON operator_idempotency_keys (expires_at);

-- The operator's stage lists: every partner's transactions of one status, newest first.
CREATE INDEX transactions_status_created_idx ON transactions (status, created_at DESC, id DESC);

-- The executed sale of an operator's fill: the back office's record, kept out of the
-- partner-visible history (which carries only the operator and the reference).
CREATE TABLE order_fills (
    transaction_id TEXT PRIMARY KEY REFERENCES transactions (id),
    rate           TEXT NOT NULL,
    fiat_amount    TEXT NOT NULL,
    reference      TEXT NOT NULL,
    operator_id    TEXT NOT NULL REFERENCES operators (id),
    filled_at      DATETIME NOT NULL
);

-- Deposits that matched no open transaction (written by the chain watcher), resolved
-- by an operator: refunded on chain or credited some other way.
CREATE TABLE unmatched_deposits (
    id                 TEXT PRIMARY KEY,
    network            TEXT NOT NULL,
    tx_hash            TEXT NOT NULL,
    log_index          INTEGER NOT NULL,
    to_address         TEXT NOT NULL,
    amount             TEXT NOT NULL,
    raw_amount         TEXT NOT NULL,
    block_number       INTEGER NOT NULL,
    transaction_id     TEXT REFERENCES transactions (id),
    status             TEXT NOT NULL CHECK (status IN ('open', 'refunded', 'credited')),
    resolution_tx_hash TEXT,
    resolution_note    TEXT,
    resolved_by        TEXT REFERENCES operators (id),
    resolved_at        DATETIME,
    created_at         DATETIME NOT NULL,
    UNIQUE (network, tx_hash, log_index)
);
CREATE INDEX unmatched_deposits_status_created_idx ON unmatched_deposits (status, created_at DESC, id DESC);

-- +goose Down
DROP TABLE unmatched_deposits;
DROP TABLE order_fills;
DROP INDEX transactions_status_created_idx;
DROP TABLE operator_idempotency_keys;
DROP TABLE operators;
