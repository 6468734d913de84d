-- +goose Up
-- Every bank transfer to a partner is a payout. A transaction an operator paid out on
-- its own before payouts of one were recorded gets its payout of one now, as
-- POST /transactions/{id}/payout records one today: the transaction's amounts, the
-- operator and reference of its payout:settled history entry, dated when its payout
-- settled; the action's audit row names it. Simulated and automatic payouts have no
-- operator: they are no bank transfer and get none.
-- A payout's id is a random (version 4) UUID in the canonical text the store writes.
CREATE TEMPORARY TABLE payouts_of_one AS
SELECT lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2)
           || '-' || substr('89ab', 1 + (random() & 3), 1) || substr(lower(hex(randomblob(2))), 2)
           || '-' || lower(hex(randomblob(6))) AS id,
       t.id AS transaction_id, t.partner_id, o.id AS operator_id,
       COALESCE(json_extract(h.metadata, '$.reference'), '') AS reference,
       t.fiat_amount, t.crypto_amount, t.payout_settled_at AS created_at
FROM transactions t
JOIN status_history h ON h.id = (SELECT max(x.id) FROM status_history x
                                 WHERE x.transaction_id = t.id AND x.reason = 'payout:settled')
JOIN operators o ON o.id = json_extract(h.metadata, '$.operator_id')
WHERE t.payout_settled_at IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM operator_batch_items i WHERE i.transaction_id = t.id AND i.kind = 'payout');

INSERT INTO operator_batches (id, kind, partner_id, reference, rate, fiat_amount, crypto_amount, operator_id, created_at)
    SELECT id, 'payout', partner_id, reference, NULL, fiat_amount, crypto_amount, operator_id, created_at FROM payouts_of_one;
INSERT INTO operator_batch_items (batch_id, kind, transaction_id, position)
    SELECT id, 'payout', transaction_id, 0 FROM payouts_of_one;
UPDATE operator_audit SET batch_id = (SELECT p.id FROM payouts_of_one p WHERE p.transaction_id = operator_audit.transaction_id)
    WHERE action = 'payout' AND batch_id IS NULL AND transaction_id IN (SELECT transaction_id FROM payouts_of_one);
DROP TABLE payouts_of_one;

-- +goose Down
-- The payouts of one stay: partners have seen them, and they are payouts like any
-- other to the code before this migration.
