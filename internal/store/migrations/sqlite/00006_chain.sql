-- +goose Up
CREATE TABLE chain_cursors (
    network    TEXT PRIMARY KEY,
    block      INTEGER NOT NULL,
    block_hash TEXT NOT NULL,
    updated_at DATETIME NOT NULL
);

CREATE TABLE chain_transfers (
    network        TEXT NOT NULL,
    tx_hash        TEXT NOT NULL,
    log_index      INTEGER NOT NULL,
    token          TEXT NOT NULL,
    block_number   INTEGER NOT NULL,
    block_hash     TEXT NOT NULL,
    block_time     DATETIME NOT NULL,
    from_address   TEXT NOT NULL,
    to_address     TEXT NOT NULL,
    raw_amount     TEXT NOT NULL,
    amount         TEXT NOT NULL,
    transaction_id TEXT REFERENCES transactions (id),
    deposit_id     TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('pending', 'confirmed', 'reorged', 'unmatched')),
    -- An unmatched transfer is re-checked against reorganisations until it has the
    -- network's confirmations; then it is final.
    final          INTEGER NOT NULL DEFAULT 0,
    note           TEXT NOT NULL DEFAULT '',
    created_at     DATETIME NOT NULL,
    updated_at     DATETIME NOT NULL,
    PRIMARY KEY (network, tx_hash, log_index)
);
CREATE INDEX chain_transfers_pending_idx ON chain_transfers (network) WHERE state = 'pending';
CREATE INDEX chain_transfers_unmatched_idx ON chain_transfers (created_at) WHERE state = 'unmatched';
CREATE INDEX chain_transfers_unsettled_idx ON chain_transfers (network) WHERE state = 'unmatched' AND final = 0;

CREATE INDEX transactions_network_address_idx ON transactions (network, deposit_address);

-- SQLite cannot alter a CHECK constraint: rebuild deposits with 'underpaid' allowed.
CREATE TABLE deposits_new (
    transaction_id         TEXT PRIMARY KEY REFERENCES transactions (id),
    deposit_id             TEXT NOT NULL,
    status                 TEXT NOT NULL CHECK (status IN ('confirming', 'confirmed', 'underpaid', 'failed', 'refunded')),
    confirmations          INTEGER NOT NULL,
    required_confirmations INTEGER NOT NULL,
    chain_hash             TEXT NOT NULL,
    amount                 TEXT NOT NULL,
    received_at            DATETIME NOT NULL,
    confirmed_at           DATETIME,
    updated_at             DATETIME NOT NULL
);
INSERT INTO deposits_new (transaction_id, deposit_id, status, confirmations, required_confirmations,
    chain_hash, amount, received_at, confirmed_at, updated_at)
SELECT transaction_id, deposit_id, status, confirmations, required_confirmations,
    chain_hash, amount, received_at, confirmed_at, updated_at FROM deposits;
DROP TABLE deposits;
ALTER TABLE deposits_new RENAME TO deposits;

-- +goose Down
DROP INDEX transactions_network_address_idx;
DROP TABLE chain_transfers;
DROP TABLE chain_cursors;
