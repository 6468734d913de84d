-- +goose Up
-- Screening of deposit senders (package screening). transactions.screening is where
-- a transaction stands: '' (not screened: no deposit yet, or screening off), pending,
-- unknown, clear, held, released, blocked; nothing is sold, paid out or sent back
-- unless it is '', clear or released.
ALTER TABLE transactions ADD COLUMN screening text NOT NULL DEFAULT '';
CREATE INDEX transactions_screening_idx ON transactions (screening) WHERE screening IN ('pending', 'unknown', 'held', 'blocked');

-- Every screening of a sender, with its evidence (findings: the screeners' answers
-- as JSON); the latest per (transaction, address) is the current one. decision is
-- an operator's release of a hit ('' or 'released').
CREATE TABLE screenings (
    id             uuid PRIMARY KEY,
    transaction_id uuid NOT NULL REFERENCES transactions (id),
    network        text NOT NULL,
    address        text NOT NULL,
    verdict        text NOT NULL CHECK (verdict IN ('clear', 'hit', 'unknown')),
    findings       text NOT NULL,
    checked_at     timestamptz NOT NULL,
    decision       text NOT NULL DEFAULT ''
);
CREATE INDEX screenings_transaction_idx ON screenings (transaction_id, checked_at);

-- Imported address lists (partnerd screening import): each import of a source
-- replaces its entries; the list rows stay as the record of what was imported.
CREATE TABLE screening_lists (
    id          uuid PRIMARY KEY,
    source      text NOT NULL,
    published   date NOT NULL,
    size        integer NOT NULL,
    imported_at timestamptz NOT NULL,
    active      boolean NOT NULL
);
CREATE TABLE screening_list_entries (
    list_id     uuid NOT NULL REFERENCES screening_lists (id) ON DELETE CASCADE,
    address_key text NOT NULL,
    address     text NOT NULL,
    PRIMARY KEY (address_key, list_id)
);
CREATE INDEX screening_list_entries_list_idx ON screening_list_entries (list_id);

-- An operator's decision on a held transaction, with its note (audited too).
CREATE TABLE screening_decisions (
    transaction_id uuid NOT NULL REFERENCES transactions (id),
    decision       text NOT NULL CHECK (decision IN ('released', 'blocked')),
    note           text NOT NULL,
    operator_id    uuid NOT NULL,
    decided_at     timestamptz NOT NULL,
    PRIMARY KEY (transaction_id, decided_at)
);

-- +goose Down
DROP TABLE screening_decisions;
DROP TABLE screening_list_entries;
DROP TABLE screening_lists;
DROP TABLE screenings;
DROP INDEX transactions_screening_idx;
ALTER TABLE transactions DROP COLUMN screening;
