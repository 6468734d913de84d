-- +goose Up
-- TOTP secrets and webhook signing secrets are stored sealed (AES-256-GCM,
-- internal/secrets); each sealed column has the id of the key that sealed it
-- beside it, so the keys can rotate (partnerd secrets rotate). A NULL key id is a
-- secret stored in the clear before this migration: read as it is, and sealed by
-- the next write or rotation.
ALTER TABLE partner_users ADD COLUMN totp_secret_key TEXT;
ALTER TABLE webhook_endpoints ADD COLUMN secret_key TEXT;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_key TEXT;

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_key;
ALTER TABLE webhook_endpoints DROP COLUMN secret_key;
ALTER TABLE partner_users DROP COLUMN totp_secret_key;
