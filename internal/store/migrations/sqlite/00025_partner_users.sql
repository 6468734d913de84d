-- +goose Up
-- People of a partner who sign in to the dashboard (API keys stay for servers).
-- email_key is the address folded to lower case in Go (SQLite's lower() folds
-- ASCII only), so an address is one user per partner whatever its case.
-- session_epoch grows when the password changes or the user is disabled: a
-- session made under an older epoch no longer counts (sign-out everywhere).
-- totp_last_step is the last RFC 6238 time step accepted, so a code is refused
-- the second time within its step.
CREATE TABLE partner_users (
    id                  TEXT PRIMARY KEY,
    partner_id          TEXT NOT NULL REFERENCES partners (id),
    email               TEXT NOT NULL,
    email_key           TEXT NOT NULL,
    role                TEXT NOT NULL CHECK (role IN ('admin', 'developer', 'finance')),
    status              TEXT NOT NULL CHECK (status IN ('invited', 'active', 'disabled')),
    password_hash       TEXT,
    totp_secret         TEXT,
    totp_enabled_at     DATETIME,
    totp_last_step      INTEGER,
    session_epoch       INTEGER NOT NULL DEFAULT 0,
    created_at          DATETIME NOT NULL,
    updated_at          DATETIME NOT NULL,
    disabled_at         DATETIME,
    password_changed_at DATETIME,
    UNIQUE (partner_id, email_key)
);
CREATE INDEX partner_users_email_idx ON partner_users (email_key);

-- One-time invitation links: only the SHA-256 of the token is kept. created_by is
-- the operator or partner user who invited (NULL for the partnerd command).
CREATE TABLE partner_invitations (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES partner_users (id),
    token_hash      TEXT NOT NULL UNIQUE,
    created_by_kind TEXT NOT NULL CHECK (created_by_kind IN ('operator', 'cli', 'partner_user')),
    created_by      TEXT,
    expires_at      DATETIME NOT NULL,
    used_at         DATETIME,
    created_at      DATETIME NOT NULL,
    CHECK ((created_by_kind = 'cli') = (created_by IS NULL))
);
CREATE INDEX partner_invitations_user_idx ON partner_invitations (user_id);

-- One-time recovery codes of a user's second factor, stored as SHA-256 hashes.
CREATE TABLE partner_user_recovery_codes (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES partner_users (id),
    code_hash  TEXT NOT NULL,
    used_at    DATETIME,
    created_at DATETIME NOT NULL,
    UNIQUE (user_id, code_hash)
);

-- +goose Down
DROP TABLE partner_user_recovery_codes;
DROP TABLE partner_invitations;
DROP TABLE partner_users;
