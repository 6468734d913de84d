-- +goose Up
-- A simulated or automatic payout (staging) is a payout of one like an operator's,
-- recorded by the service itself: no operator recorded it (operator_id NULL).
--
-- SQLite cannot relax NOT NULL in place, and operator_batch_items and operator_audit
-- reference the table, with foreign keys enforced. The documented 12-step procedure
-- turns foreign keys off, which SQLite ignores inside a transaction (goose runs each
-- migration in one), and renaming a new table over the old would make the children
-- reference a dropped name. Instead, with the foreign keys deferred to the commit
-- (defer_foreign_keys, reset at the end of the transaction): the rows are copied
-- aside, the table dropped (its children's rows count as violations meanwhile),
-- created again under its own name, which the children's REFERENCES clauses name
-- still, and filled back (each row's children count as satisfied again), so the
-- commit checks that every reference holds.
PRAGMA defer_foreign_keys = ON;
CREATE TEMPORARY TABLE operator_batches_copy AS SELECT * FROM operator_batches;
DROP TABLE operator_batches;
CREATE TABLE operator_batches (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('payout', 'fill')),
    partner_id    TEXT REFERENCES partners (id),
    reference     TEXT NOT NULL,
    rate          TEXT,
    fiat_amount   TEXT NOT NULL,
    crypto_amount TEXT NOT NULL,
    operator_id   TEXT REFERENCES operators (id),
    created_at    DATETIME NOT NULL
);
INSERT INTO operator_batches (id, kind, partner_id, reference, rate, fiat_amount, crypto_amount, operator_id, created_at)
    SELECT id, kind, partner_id, reference, rate, fiat_amount, crypto_amount, operator_id, created_at FROM operator_batches_copy;
DROP TABLE operator_batches_copy;
CREATE INDEX operator_batches_kind_created_idx ON operator_batches (kind, created_at DESC, id DESC);
CREATE INDEX operator_batches_partner_idx ON operator_batches (partner_id, kind, created_at DESC, id DESC);

-- +goose Down
-- The service's payouts of one go (the code before this migration records none);
-- their transactions keep their settled payout. The table is rebuilt as above, with
-- operator_id NOT NULL again.
DELETE FROM operator_batch_items WHERE batch_id IN (SELECT id FROM operator_batches WHERE operator_id IS NULL);
UPDATE operator_audit SET batch_id = NULL WHERE batch_id IN (SELECT id FROM operator_batches WHERE operator_id IS NULL);
DELETE FROM operator_batches WHERE operator_id IS NULL;
PRAGMA defer_foreign_keys = ON;
CREATE TEMPORARY TABLE operator_batches_copy AS SELECT * FROM operator_batches;
DROP TABLE operator_batches;
CREATE TABLE operator_batches (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('payout', 'fill')),
    partner_id    TEXT REFERENCES partners (id),
    reference     TEXT NOT NULL,
    rate          TEXT,
    fiat_amount   TEXT NOT NULL,
    crypto_amount TEXT NOT NULL,
    operator_id   TEXT NOT NULL REFERENCES operators (id),
    created_at    DATETIME NOT NULL
);
INSERT INTO operator_batches (id, kind, partner_id, reference, rate, fiat_amount, crypto_amount, operator_id, created_at)
    SELECT id, kind, partner_id, reference, rate, fiat_amount, crypto_amount, operator_id, created_at FROM operator_batches_copy;
DROP TABLE operator_batches_copy;
CREATE INDEX operator_batches_kind_created_idx ON operator_batches (kind, created_at DESC, id DESC);
CREATE INDEX operator_batches_partner_idx ON operator_batches (partner_id, kind, created_at DESC, id DESC);
