-- +goose Up
-- Reads that grew with the database (scripts/benchscale.sh): the totals a page
-- shows are counted and summed from an index alone, without reading each row, and
-- the resolved refund tasks are paged through an index instead of sorted. SQLite
-- has no INCLUDE: the amounts are the indexes' last columns, which makes each a
-- covering index of the statement that sums them (SQLite adds the values up in
-- Go, reading them from the index).

-- The failed stage: its list, newest or oldest first, and the overview's count and
-- sums of its amounts (the stage's condition is in the statement's text, as the
-- partial index's is: see store.failedStage).
CREATE INDEX transactions_failed_idx ON transactions (created_at DESC, id DESC, crypto_amount, fiat_amount)
    WHERE status = 'failed';

-- The awaiting-payout stage: the same index as before, now holding the amounts
-- its total sums.
DROP INDEX transactions_awaiting_payout_idx;
CREATE INDEX transactions_awaiting_payout_idx ON transactions (created_at DESC, id DESC, crypto_amount, fiat_amount)
    WHERE status = 'completed' AND payout_settled_at IS NULL;

-- A partner's revenue ledger, now holding the share its summary sums.
DROP INDEX revenue_partner_ts_idx;
CREATE INDEX revenue_partner_ts_idx ON revenue (partner_id, ts DESC, transaction_id DESC, share);

-- The resolved refund tasks (every task not open), newest first: the refund work's
-- history, which only grows.
CREATE INDEX refund_tasks_resolved_idx ON refund_tasks (created_at DESC, id DESC) WHERE status <> 'open';

-- +goose Down
DROP INDEX refund_tasks_resolved_idx;
DROP INDEX revenue_partner_ts_idx;
CREATE INDEX revenue_partner_ts_idx ON revenue (partner_id, ts DESC, transaction_id DESC);
DROP INDEX transactions_awaiting_payout_idx;
CREATE INDEX transactions_awaiting_payout_idx ON transactions (created_at DESC, id DESC)
    WHERE status = 'completed' AND payout_settled_at IS NULL;
DROP INDEX transactions_failed_idx;
