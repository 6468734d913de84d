-- +goose Up
-- A deposit is the total of its counted transfers: 'partial' while it is short of the
-- expected amount (and 'underpaid' once the transaction expired so).
ALTER TABLE deposits DROP CONSTRAINT deposits_status_check;
ALTER TABLE deposits ADD CONSTRAINT deposits_status_check
    CHECK (status IN ('partial', 'confirming', 'confirmed', 'underpaid', 'failed', 'refunded'));

-- The transfers counted toward a transaction's deposit, in the order they arrived.
CREATE TABLE deposit_transfers (
    transaction_id         uuid NOT NULL REFERENCES transactions (id),
    position               integer NOT NULL,
    transfer_id            text NOT NULL,
    tx_hash                text NOT NULL,
    log_index              integer NOT NULL,
    from_address           text NOT NULL,
    amount                 numeric(30, 6) NOT NULL,
    block_number           bigint NOT NULL,
    confirmations          integer NOT NULL,
    required_confirmations integer NOT NULL,
    received_at            timestamptz NOT NULL,
    confirmed_at           timestamptz,
    PRIMARY KEY (transaction_id, transfer_id)
);
-- Every existing deposit was a single transfer.
INSERT INTO deposit_transfers (transaction_id, position, transfer_id, tx_hash, log_index, from_address, amount,
    block_number, confirmations, required_confirmations, received_at, confirmed_at)
SELECT d.transaction_id, 0, d.deposit_id, d.chain_hash, COALESCE(c.log_index, 0), COALESCE(c.from_address, ''), d.amount,
    COALESCE(c.block_number, 0), d.confirmations, d.required_confirmations, d.received_at, d.confirmed_at
FROM deposits d LEFT JOIN chain_transfers c ON c.transaction_id = d.transaction_id AND c.deposit_id = d.deposit_id;

-- Unmatched deposits become one kind of refund task: money to give back or decide on.
ALTER TABLE unmatched_deposits RENAME TO refund_tasks;
ALTER TABLE refund_tasks ADD COLUMN kind text NOT NULL DEFAULT 'unmatched'
    CHECK (kind IN ('unmatched', 'excess', 'short', 'dust'));
ALTER TABLE refund_tasks ADD COLUMN from_address text NOT NULL DEFAULT '';
ALTER TABLE refund_tasks ADD COLUMN partner_id uuid REFERENCES partners (id);
UPDATE refund_tasks r SET partner_id = t.partner_id FROM transactions t WHERE t.id = r.transaction_id;
ALTER TABLE refund_tasks DROP CONSTRAINT unmatched_deposits_network_tx_hash_log_index_key;
ALTER TABLE refund_tasks ADD CONSTRAINT refund_tasks_kind_transfer_key UNIQUE (kind, network, tx_hash, log_index);
ALTER INDEX unmatched_deposits_status_created_idx RENAME TO refund_tasks_status_created_idx;
CREATE INDEX refund_tasks_kind_status_created_idx ON refund_tasks (kind, status, created_at DESC, id DESC);
CREATE INDEX refund_tasks_transaction_idx ON refund_tasks (transaction_id);

-- The shortfall accepted within the underpayment tolerance, in tokens.
ALTER TABLE revenue ADD COLUMN shortfall numeric(30, 6) NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE revenue DROP COLUMN shortfall;
DROP INDEX refund_tasks_transaction_idx;
DROP INDEX refund_tasks_kind_status_created_idx;
DELETE FROM refund_tasks WHERE kind <> 'unmatched';
ALTER TABLE refund_tasks DROP CONSTRAINT refund_tasks_kind_transfer_key;
ALTER TABLE refund_tasks ADD CONSTRAINT unmatched_deposits_network_tx_hash_log_index_key UNIQUE (network, tx_hash, log_index);
ALTER TABLE refund_tasks DROP COLUMN partner_id;
ALTER TABLE refund_tasks DROP COLUMN from_address;
ALTER TABLE refund_tasks DROP COLUMN kind;
ALTER INDEX refund_tasks_status_created_idx RENAME TO unmatched_deposits_status_created_idx;
ALTER TABLE refund_tasks RENAME TO unmatched_deposits;
DROP TABLE deposit_transfers;
UPDATE deposits SET status = 'confirming' WHERE status = 'partial';
ALTER TABLE deposits DROP CONSTRAINT deposits_status_check;
ALTER TABLE deposits ADD CONSTRAINT deposits_status_check
    CHECK (status IN ('confirming', 'confirmed', 'underpaid', 'failed', 'refunded'));
