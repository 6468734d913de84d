-- +goose Up
-- Partner decisions (partner API 1.12.0): where a refund goes (given on create or
-- with the refund request), when the partner asked for it, and the destination on
-- the refund task the operators execute.
ALTER TABLE transactions ADD COLUMN refund_address text;
ALTER TABLE transactions ADD COLUMN refund_requested_at timestamptz;
ALTER TABLE refund_tasks ADD COLUMN refund_to text;

-- +goose Down
ALTER TABLE refund_tasks DROP COLUMN refund_to;
ALTER TABLE transactions DROP COLUMN refund_requested_at;
ALTER TABLE transactions DROP COLUMN refund_address;
