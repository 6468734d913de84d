-- +goose Up
-- A deposit is the total of its counted transfers: 'partial' while it is short of the
-- expected amount (and 'underpaid' once the transaction expired so). SQLite cannot
-- alter a CHECK constraint: rebuild deposits.
CREATE TABLE deposits_new (
    transaction_id         TEXT PRIMARY KEY REFERENCES transactions (id),
    deposit_id             TEXT NOT NULL,
    status                 TEXT NOT NULL CHECK (status IN ('partial', 'confirming', 'confirmed', 'underpaid', 'failed', 'refunded')),
    confirmations          INTEGER NOT NULL,
    required_confirmations INTEGER NOT NULL,
    chain_hash             TEXT NOT NULL,
    amount                 TEXT NOT NULL,
    received_at            DATETIME NOT NULL,
    confirmed_at           DATETIME,
    updated_at             DATETIME NOT NULL
);
INSERT INTO deposits_new SELECT transaction_id, deposit_id, status, confirmations, required_confirmations,
    chain_hash, amount, received_at, confirmed_at, updated_at FROM deposits;
DROP TABLE deposits;
ALTER TABLE deposits_new RENAME TO deposits;

-- The transfers counted toward a transaction's deposit, in the order they arrived.
CREATE TABLE deposit_transfers (
    transaction_id         TEXT NOT NULL REFERENCES transactions (id),
    position               INTEGER NOT NULL,
    transfer_id            TEXT NOT NULL,
    tx_hash                TEXT NOT NULL,
    log_index              INTEGER NOT NULL,
    from_address           TEXT NOT NULL,
    amount                 TEXT NOT NULL,
    block_number           INTEGER NOT NULL,
    confirmations          INTEGER NOT NULL,
    required_confirmations INTEGER NOT NULL,
    received_at            DATETIME NOT NULL,
    confirmed_at           DATETIME,
    PRIMARY KEY (transaction_id, transfer_id)
);
-- Every existing deposit was a single transfer.
INSERT INTO deposit_transfers (transaction_id, position, transfer_id, tx_hash, log_index, from_address, amount,
    block_number, confirmations, required_confirmations, received_at, confirmed_at)
SELECT d.transaction_id, 0, d.deposit_id, d.chain_hash, COALESCE(c.log_index, 0), COALESCE(c.from_address, ''), d.amount,
    COALESCE(c.block_number, 0), d.confirmations, d.required_confirmations, d.received_at, d.confirmed_at
FROM deposits d LEFT JOIN chain_transfers c ON c.transaction_id = d.transaction_id AND c.deposit_id = d.deposit_id;

-- Unmatched deposits become one kind of refund task: money to give back or decide on.
CREATE TABLE refund_tasks (
    id                 TEXT PRIMARY KEY,
    kind               TEXT NOT NULL DEFAULT 'unmatched' CHECK (kind IN ('unmatched', 'excess', 'short', 'dust')),
    network            TEXT NOT NULL,
    tx_hash            TEXT NOT NULL,
    log_index          INTEGER NOT NULL,
    from_address       TEXT NOT NULL DEFAULT '',
    to_address         TEXT NOT NULL,
    amount             TEXT NOT NULL,
    raw_amount         TEXT NOT NULL,
    block_number       INTEGER NOT NULL,
    transaction_id     TEXT REFERENCES transactions (id),
    partner_id         TEXT REFERENCES partners (id),
    status             TEXT NOT NULL CHECK (status IN ('open', 'refunded', 'credited')),
    resolution_tx_hash TEXT,
    resolution_note    TEXT,
    resolved_by        TEXT REFERENCES operators (id),
    resolved_at        DATETIME,
    created_at         DATETIME NOT NULL,
    UNIQUE (kind, network, tx_hash, log_index)
);
INSERT INTO refund_tasks (id, kind, network, tx_hash, log_index, to_address, amount, raw_amount, block_number,
    transaction_id, partner_id, status, resolution_tx_hash, resolution_note, resolved_by, resolved_at, created_at)
SELECT u.id, 'unmatched', u.network, u.tx_hash, u.log_index, u.to_address, u.amount, u.raw_amount, u.block_number,
    u.transaction_id, (SELECT t.partner_id FROM transactions t WHERE t.id = u.transaction_id), u.status,
    u.resolution_tx_hash, u.resolution_note, u.resolved_by, u.resolved_at, u.created_at
FROM unmatched_deposits u;
DROP TABLE unmatched_deposits;
CREATE INDEX refund_tasks_status_created_idx ON refund_tasks (status, created_at DESC, id DESC);
CREATE INDEX refund_tasks_kind_status_created_idx ON refund_tasks (kind, status, created_at DESC, id DESC);
CREATE INDEX refund_tasks_transaction_idx ON refund_tasks (transaction_id);

-- The shortfall accepted within the underpayment tolerance, in tokens.
ALTER TABLE revenue ADD COLUMN shortfall TEXT NOT NULL DEFAULT '0';

-- +goose Down
ALTER TABLE revenue DROP COLUMN shortfall;
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
INSERT INTO unmatched_deposits SELECT id, network, tx_hash, log_index, to_address, amount, raw_amount, block_number,
    transaction_id, status, resolution_tx_hash, resolution_note, resolved_by, resolved_at, created_at
FROM refund_tasks WHERE kind = 'unmatched';
DROP TABLE refund_tasks;
CREATE INDEX unmatched_deposits_status_created_idx ON unmatched_deposits (status, created_at DESC, id DESC);
DROP TABLE deposit_transfers;
