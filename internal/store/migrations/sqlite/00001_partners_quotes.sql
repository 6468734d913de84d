-- Amounts are TEXT holding canonical decimal strings: SQLite has no exact numeric
-- type, so the store never compares or sums amounts in SQL on this dialect.
-- Times are written by the driver in one UTC format, so text order is time order.

-- +goose Up
CREATE TABLE partners (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
    key_hash    TEXT NOT NULL UNIQUE,
    fee_rate    TEXT NOT NULL,
    share_rate  TEXT NOT NULL,
    created_at  DATETIME NOT NULL
);

CREATE TABLE quotes (
    id              TEXT PRIMARY KEY,
    partner_id      TEXT NOT NULL REFERENCES partners (id),
    crypto_currency TEXT NOT NULL,
    network         TEXT NOT NULL,
    base_rate       TEXT NOT NULL,
    adjusted_rate   TEXT NOT NULL,
    crypto_amount   TEXT NOT NULL,
    fiat_amount     TEXT NOT NULL,
    created_at      DATETIME NOT NULL,
    expires_at      DATETIME NOT NULL,
    used_at         DATETIME
);
CREATE INDEX quotes_partner_created_idx ON quotes (partner_id, created_at DESC);

-- +goose Down
DROP TABLE quotes;
DROP TABLE partners;
