-- +goose Up
-- Every back-office read is served by an index or a bounded scan, whatever the
-- number of transactions (the plans are checked by store's TestReadPlans).

-- A transaction's chain transfers (its case file, the console's transaction page),
-- and the foreign key's check when a transaction is deleted.
CREATE INDEX chain_transfers_transaction_idx ON chain_transfers (transaction_id);

-- The operator search looks a support ticket's text up by exact value: the folded
-- merchant reference (reference_key, of any partner), and the deposit address and
-- chain hashes in lower case. The lower-case forms are columns computed when a row
-- is written, so the search compares stored values through their indexes.
ALTER TABLE transactions ADD COLUMN address_key text GENERATED ALWAYS AS (lower(deposit_address)) STORED;
ALTER TABLE deposits ADD COLUMN hash_key text GENERATED ALWAYS AS (lower(chain_hash)) STORED;
ALTER TABLE chain_transfers ADD COLUMN hash_key text GENERATED ALWAYS AS (lower(tx_hash)) STORED;
CREATE INDEX transactions_reference_idx ON transactions (reference_key);
CREATE INDEX transactions_address_key_idx ON transactions (address_key);
CREATE INDEX deposits_hash_key_idx ON deposits (hash_key);
CREATE INDEX chain_transfers_hash_key_idx ON chain_transfers (hash_key);

-- The operator list without a stage: every partner's transactions, newest first.
CREATE INDEX transactions_created_idx ON transactions (created_at DESC, id DESC);

-- The awaiting-payout stage (completed, payout not settled): its list either way
-- and its count, without reading the completed transactions already paid.
CREATE INDEX transactions_awaiting_payout_idx ON transactions (created_at DESC, id DESC)
    WHERE status = 'completed' AND payout_settled_at IS NULL;

-- The requeue sweep: events marked requeued, by when they were due, and
-- never-attempted pending events per partner (joined to the enabled endpoints).
CREATE INDEX events_requeued_idx ON events (next_attempt_at) WHERE requeued;
CREATE INDEX events_unqueued_idx ON events (partner_id, created_at)
    WHERE publish_status = 'pending' AND attempts = 0 AND NOT requeued;

-- The overview's failing endpoints: the events failed or retrying after a failed
-- attempt, per partner.
CREATE INDEX events_failing_idx ON events (partner_id)
    WHERE publish_status = 'failed' OR (publish_status = 'pending' AND attempts > 0);

-- A partner's payouts (GET /payouts, the exports), newest first.
CREATE INDEX operator_batches_partner_idx ON operator_batches (partner_id, kind, created_at DESC, id DESC);

-- The audit log of one operator.
CREATE INDEX operator_audit_operator_idx ON operator_audit (operator_id, created_at DESC, id DESC);

-- +goose Down
DROP INDEX operator_audit_operator_idx;
DROP INDEX operator_batches_partner_idx;
DROP INDEX events_failing_idx;
DROP INDEX events_unqueued_idx;
DROP INDEX events_requeued_idx;
DROP INDEX transactions_awaiting_payout_idx;
DROP INDEX transactions_created_idx;
DROP INDEX chain_transfers_hash_key_idx;
DROP INDEX deposits_hash_key_idx;
DROP INDEX transactions_address_key_idx;
DROP INDEX transactions_reference_idx;
ALTER TABLE chain_transfers DROP COLUMN hash_key;
ALTER TABLE deposits DROP COLUMN hash_key;
ALTER TABLE transactions DROP COLUMN address_key;
DROP INDEX chain_transfers_transaction_idx;
