-- +goose Up
-- People of a partner who sign in to the dashboard (API keys stay for servers).
-- email_key is the address folded to lower case in Go (SQLite's lower() folds
-- ASCII only), so an address is one user per partner whatever its case.
-- session_epoch grows when the password changes or the user is disabled: a
-- session made under an older epoch no longer counts (sign-out everywhere).
-- totp_last_step is the last RFC 6238 time step accepted, so a code is refused
-- the second time within its step.
CREATE TABLE partner_users (
    id                  uuid PRIMARY KEY,
    partner_id          uuid NOT NULL REFERENCES partners (id),
    email               text NOT NULL,
    email_key           text NOT NULL,
    role                text NOT NULL CHECK (role IN ('admin', 'developer', 'finance')),
    status              text NOT NULL CHECK (status IN ('invited', 'active', 'disabled')),
    password_hash       text,
    totp_secret         text,
    totp_enabled_at     timestamptz,
    totp_last_step      bigint,
    session_epoch       bigint NOT NULL DEFAULT 0,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    disabled_at         timestamptz,
    password_changed_at timestamptz,
    UNIQUE (partner_id, email_key)
);
CREATE INDEX partner_users_email_idx ON partner_users (email_key);

-- One-time invitation links: only the SHA-256 of the token is kept. created_by is
-- the operator or partner user who invited (NULL for the partnerd command).
CREATE TABLE partner_invitations (
    id              uuid PRIMARY KEY,
    user_id         uuid NOT NULL REFERENCES partner_users (id),
    token_hash      text NOT NULL UNIQUE,
    created_by_kind text NOT NULL CHECK (created_by_kind IN ('operator', 'cli', 'partner_user')),
    created_by      uuid,
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz,
    created_at      timestamptz NOT NULL,
    CHECK ((created_by_kind = 'cli') = (created_by IS NULL))
);
CREATE INDEX partner_invitations_user_idx ON partner_invitations (user_id);

-- One-time recovery codes of a user's second factor, stored as SHA-256 hashes.
CREATE TABLE partner_user_recovery_codes (
    id         uuid PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES partner_users (id),
    code_hash  text NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL,
    UNIQUE (user_id, code_hash)
);

-- +goose Down
DROP TABLE partner_user_recovery_codes;
DROP TABLE partner_invitations;
DROP TABLE partner_users;
