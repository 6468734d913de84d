-- +goose Up
-- Who made an audited change: an operator (operator_id set), or the partnerd command
-- on a server (actor 'cli'), which acts as no operator (operator_id NULL). SQLite
-- cannot relax NOT NULL in place: the table is rebuilt (nothing references it).
CREATE TABLE operator_audit_new (
    id                   TEXT PRIMARY KEY,
    actor                TEXT NOT NULL DEFAULT 'operator',
    operator_id          TEXT REFERENCES operators (id),
    action               TEXT NOT NULL,
    transaction_id       TEXT REFERENCES transactions (id),
    unmatched_deposit_id TEXT REFERENCES refund_tasks (id),
    batch_id             TEXT REFERENCES operator_batches (id),
    subject_id           TEXT,
    reference            text,
    created_at           DATETIME NOT NULL,
    CHECK ((actor = 'operator') = (operator_id IS NOT NULL))
);
INSERT INTO operator_audit_new (id, operator_id, action, transaction_id, unmatched_deposit_id, batch_id, subject_id, reference, created_at)
    SELECT id, operator_id, action, transaction_id, unmatched_deposit_id, batch_id, subject_id, reference, created_at FROM operator_audit;
DROP TABLE operator_audit;
ALTER TABLE operator_audit_new RENAME TO operator_audit;
CREATE INDEX operator_audit_created_idx ON operator_audit (created_at DESC, id DESC);
CREATE INDEX operator_audit_transaction_idx ON operator_audit (transaction_id, created_at DESC, id DESC);

-- +goose Down
CREATE TABLE operator_audit_old (
    id                   TEXT PRIMARY KEY,
    operator_id          TEXT NOT NULL REFERENCES operators (id),
    action               TEXT NOT NULL,
    transaction_id       TEXT REFERENCES transactions (id),
    unmatched_deposit_id TEXT REFERENCES refund_tasks (id),
    batch_id             TEXT REFERENCES operator_batches (id),
    subject_id           TEXT,
    reference            text,
    created_at           DATETIME NOT NULL
);
INSERT INTO operator_audit_old (id, operator_id, action, transaction_id, unmatched_deposit_id, batch_id, subject_id, reference, created_at)
    SELECT id, operator_id, action, transaction_id, unmatched_deposit_id, batch_id, subject_id, reference, created_at FROM operator_audit
    WHERE operator_id IS NOT NULL;
DROP TABLE operator_audit;
ALTER TABLE operator_audit_old RENAME TO operator_audit;
CREATE INDEX operator_audit_created_idx ON operator_audit (created_at DESC, id DESC);
CREATE INDEX operator_audit_transaction_idx ON operator_audit (transaction_id, created_at DESC, id DESC);
