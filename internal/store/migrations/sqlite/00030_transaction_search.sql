-- +goose Up
-- GET /transactions searches by deposit address and by a deposit transfer's chain
-- hash: both are looked up by value, so each has its index.
CREATE INDEX transactions_partner_address_idx ON transactions (partner_id, deposit_address);
CREATE INDEX deposit_transfers_tx_hash_idx ON deposit_transfers (tx_hash);

-- +goose Down
DROP INDEX deposit_transfers_tx_hash_idx;
DROP INDEX transactions_partner_address_idx;
