-- +goose Up
-- Each network's scanner cursor: the last block fully processed and its hash.
CREATE TABLE chain_cursors (
    network    text PRIMARY KEY,
    block      bigint NOT NULL,
    block_hash text NOT NULL,
    updated_at timestamptz NOT NULL
);

-- Every token transfer seen to a deposit address, identified by (network, chain tx
-- hash, log index). state: pending (detected, confirming), confirmed (final),
-- reorged (its block left the canonical chain), unmatched (kept for operators).
CREATE TABLE chain_transfers (
    network        text NOT NULL,
    tx_hash        text NOT NULL,
    log_index      integer NOT NULL,
    token          text NOT NULL,
    block_number   bigint NOT NULL,
    block_hash     text NOT NULL,
    block_time     timestamptz NOT NULL,
    from_address   text NOT NULL,
    to_address     text NOT NULL,
    raw_amount     numeric(78, 0) NOT NULL,
    amount         numeric(30, 6) NOT NULL,
    transaction_id uuid REFERENCES transactions (id),
    deposit_id     text NOT NULL,
    state          text NOT NULL CHECK (state IN ('pending', 'confirmed', 'reorged', 'unmatched')),
    -- An unmatched transfer is re-checked against reorganisations until it has the
    -- network's confirmations; then it is final.
    final          boolean NOT NULL DEFAULT false,
    note           text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (network, tx_hash, log_index)
);
CREATE INDEX chain_transfers_pending_idx ON chain_transfers (network) WHERE state = 'pending';
CREATE INDEX chain_transfers_unmatched_idx ON chain_transfers (created_at) WHERE state = 'unmatched';
CREATE INDEX chain_transfers_unsettled_idx ON chain_transfers (network) WHERE state = 'unmatched' AND NOT final;

-- The scanner looks transactions up by deposit address.
CREATE INDEX transactions_network_address_idx ON transactions (network, deposit_address);

-- An underpaid deposit is confirmed but short of the expected amount.
ALTER TABLE deposits DROP CONSTRAINT deposits_status_check;
ALTER TABLE deposits ADD CONSTRAINT deposits_status_check
    CHECK (status IN ('confirming', 'confirmed', 'underpaid', 'failed', 'refunded'));

-- +goose Down
ALTER TABLE deposits DROP CONSTRAINT deposits_status_check;
ALTER TABLE deposits ADD CONSTRAINT deposits_status_check
    CHECK (status IN ('confirming', 'confirmed', 'failed', 'refunded'));
DROP INDEX transactions_network_address_idx;
DROP TABLE chain_transfers;
DROP TABLE chain_cursors;
