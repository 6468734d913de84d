-- +goose Up
-- Back-office operators and their API keys (sk_op_…, stored as SHA-256 hashes).
CREATE TABLE operators (
    id         uuid PRIMARY KEY,
    name       text NOT NULL,
    key_hash   text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL
);

-- Idempotency keys of operator requests: the partner table's shape, owned by an operator.
CREATE TABLE operator_idempotency_keys (
    operator_id     uuid NOT NULL REFERENCES operators (id),
    operation       text NOT NULL,
    key             text NOT NULL,
    fingerprint     text NOT NULL,
    state           text NOT NULL CHECK (state IN ('in_progress', 'done')),
    response_status integer,
    response_body   bytea,
    locked_at       timestamptz NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (operator_id, operation, key)
);
CREATE INDEX operator_idempotency_keys_expires_idx ON operator_idempotency_keys (expires_at);

-- The operator's stage lists: every partner's transactions of one status, newest first.
CREATE INDEX transactions_status_created_idx ON transactions (status, created_at DESC, id DESC);

-- The executed sale of an operator's fill: the back office's record, kept out of the
-- partner-visible history (which carries only the operator and the reference).
CREATE TABLE order_fills (
    transaction_id uuid PRIMARY KEY REFERENCES transactions (id),
    rate           numeric(20, 2) NOT NULL,
    fiat_amount    numeric(20, 2) NOT NULL,
    reference      text NOT NULL,
    operator_id    uuid NOT NULL REFERENCES operators (id),
    filled_at      timestamptz NOT NULL
);

-- Deposits that matched no open transaction (written by the chain watcher), resolved
-- by an operator: refunded on chain or credited some other way.
CREATE TABLE unmatched_deposits (
    id                 uuid PRIMARY KEY,
    network            text NOT NULL,
    tx_hash            text NOT NULL,
    log_index          integer NOT NULL,
    to_address         text NOT NULL,
    amount             numeric(30, 6) NOT NULL,
    raw_amount         text NOT NULL,
    block_number       bigint NOT NULL,
    transaction_id     uuid REFERENCES transactions (id),
    status             text NOT NULL CHECK (status IN ('open', 'refunded', 'credited')),
    resolution_tx_hash text,
    resolution_note    text,
    resolved_by        uuid REFERENCES operators (id),
    resolved_at        timestamptz,
    created_at         timestamptz NOT NULL,
    UNIQUE (network, tx_hash, log_index)
);
CREATE INDEX unmatched_deposits_status_created_idx ON unmatched_deposits (status, created_at DESC, id DESC);

-- +goose Down
DROP TABLE unmatched_deposits;
DROP TABLE order_fills;
DROP INDEX transactions_status_created_idx;
DROP TABLE operator_idempotency_keys;
DROP TABLE operators;
