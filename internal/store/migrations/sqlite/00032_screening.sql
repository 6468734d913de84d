-- +goose Up
-- Screening of deposit senders (package screening); see the PostgreSQL migration.
ALTER TABLE transactions ADD COLUMN screening TEXT NOT NULL DEFAULT '';
CREATE INDEX transactions_screening_idx ON transactions (screening) WHERE screening IN ('pending', 'unknown', 'held', 'blocked');

CREATE TABLE screenings (
    id             TEXT PRIMARY KEY,
    transaction_id TEXT NOT NULL REFERENCES transactions (id),
    network        TEXT NOT NULL,
    address        TEXT NOT NULL,
    verdict        TEXT NOT NULL CHECK (verdict IN ('clear', 'hit', 'unknown')),
    findings       TEXT NOT NULL,
    checked_at     DATETIME NOT NULL,
    decision       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX screenings_transaction_idx ON screenings (transaction_id, checked_at);

CREATE TABLE screening_lists (
    id          TEXT PRIMARY KEY,
    source      TEXT NOT NULL,
    published   TEXT NOT NULL,
    size        INTEGER NOT NULL,
    imported_at DATETIME NOT NULL,
    active      INTEGER NOT NULL
);
CREATE TABLE screening_list_entries (
    list_id     TEXT NOT NULL REFERENCES screening_lists (id) ON DELETE CASCADE,
    address_key TEXT NOT NULL,
    address     TEXT NOT NULL,
    PRIMARY KEY (address_key, list_id)
);
CREATE INDEX screening_list_entries_list_idx ON screening_list_entries (list_id);

CREATE TABLE screening_decisions (
    transaction_id TEXT NOT NULL REFERENCES transactions (id),
    decision       TEXT NOT NULL CHECK (decision IN ('released', 'blocked')),
    note           TEXT NOT NULL,
    operator_id    TEXT NOT NULL,
    decided_at     DATETIME NOT NULL,
    PRIMARY KEY (transaction_id, decided_at)
);

-- +goose Down
DROP TABLE screening_decisions;
DROP TABLE screening_list_entries;
DROP TABLE screening_lists;
DROP TABLE screenings;
DROP INDEX transactions_screening_idx;
ALTER TABLE transactions DROP COLUMN screening;
