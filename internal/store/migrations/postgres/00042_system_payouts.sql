-- +goose Up
-- A simulated or automatic payout (staging) is a payout of one like an operator's,
-- recorded by the service itself: no operator recorded it (operator_id NULL).
ALTER TABLE operator_batches ALTER COLUMN operator_id DROP NOT NULL;

-- +goose Down
-- The service's payouts of one go (the code before this migration records none);
-- their transactions keep their settled payout.
DELETE FROM operator_batch_items WHERE batch_id IN (SELECT id FROM operator_batches WHERE operator_id IS NULL);
UPDATE operator_audit SET batch_id = NULL WHERE batch_id IN (SELECT id FROM operator_batches WHERE operator_id IS NULL);
DELETE FROM operator_batches WHERE operator_id IS NULL;
ALTER TABLE operator_batches ALTER COLUMN operator_id SET NOT NULL;
