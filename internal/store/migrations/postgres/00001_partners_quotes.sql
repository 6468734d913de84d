-- +goose Up
CREATE TABLE partners (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    environment text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    key_hash    text NOT NULL UNIQUE,
    fee_rate    numeric(9, 6) NOT NULL,
    share_rate  numeric(9, 6) NOT NULL,
    created_at  timestamptz NOT NULL
);

CREATE TABLE quotes (
    id              uuid PRIMARY KEY,
    partner_id      uuid NOT NULL REFERENCES partners (id),
    crypto_currency text NOT NULL,
    network         text NOT NULL,
    base_rate       numeric(20, 2) NOT NULL,
    adjusted_rate   numeric(20, 2) NOT NULL,
    crypto_amount   numeric(30, 6) NOT NULL,
    fiat_amount     numeric(20, 2) NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz
);
CREATE INDEX quotes_partner_created_idx ON quotes (partner_id, created_at DESC);

-- +goose Down
DROP TABLE quotes;
DROP TABLE partners;
