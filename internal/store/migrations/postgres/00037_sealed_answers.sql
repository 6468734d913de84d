-- +goose Up
-- A stored idempotent answer can hold a secret (a new API key, an invitation
-- link, a webhook signing secret): every answer is stored sealed (AES-256-GCM,
-- SECRETS_KEYS), with the id of the key that sealed it beside it, so partnerd
-- secrets rotate seals it again. A NULL key id is an answer stored in the clear
-- before this migration, read as it is (it expires within a day).
ALTER TABLE idempotency_keys ADD COLUMN response_key text;
ALTER TABLE operator_idempotency_keys ADD COLUMN response_key text;

-- +goose Down
ALTER TABLE operator_idempotency_keys DROP COLUMN response_key;
ALTER TABLE idempotency_keys DROP COLUMN response_key;
