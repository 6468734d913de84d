-- +goose Up
-- Where a partner's payouts go (PUT /partners/{id}/settlement-account, operator API
-- 3.3.0): one bank account per partner, verified by name enquiry. account_name is
-- the holder's name the bank gave (Paystack's GET /bank/resolve); name_matches is
-- false when an operator confirmed it despite differing from the partner's name.
CREATE TABLE settlement_accounts (
    partner_id     uuid PRIMARY KEY REFERENCES partners (id),
    bank_code      text NOT NULL,
    bank_name      text NOT NULL,
    account_number text NOT NULL,
    account_name   text NOT NULL,
    name_matches   boolean NOT NULL,
    verified_at    timestamptz NOT NULL,
    set_by         uuid NOT NULL REFERENCES operators (id),
    updated_at     timestamptz NOT NULL
);

-- +goose Down
DROP TABLE settlement_accounts;
