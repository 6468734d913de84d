-- +goose Up
-- A partner's user on the dashboard is an audited actor (actor 'partner_user'):
-- partner_user_id names them, operator_id stays NULL. (SQLite cannot add a CHECK
-- in place; the store writes the actor and the user from one field.) The index
-- serves a partner's activity page (its users' actions, newest first).
ALTER TABLE operator_audit ADD COLUMN partner_user_id TEXT REFERENCES partner_users (id);
CREATE INDEX operator_audit_partner_user_idx ON operator_audit (partner_user_id, created_at DESC, id DESC)
    WHERE partner_user_id IS NOT NULL;

-- +goose Down
-- A column with a foreign key cannot be dropped in SQLite: the table is rebuilt
-- as 00024 left it, without the partner users' rows.
CREATE TABLE operator_audit_old (
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
INSERT INTO operator_audit_old (id, actor, operator_id, action, transaction_id, unmatched_deposit_id, batch_id, subject_id, reference, created_at)
    SELECT id, actor, operator_id, action, transaction_id, unmatched_deposit_id, batch_id, subject_id, reference, created_at FROM operator_audit
    WHERE partner_user_id IS NULL;
DROP TABLE operator_audit;
ALTER TABLE operator_audit_old RENAME TO operator_audit;
CREATE INDEX operator_audit_created_idx ON operator_audit (created_at DESC, id DESC);
CREATE INDEX operator_audit_transaction_idx ON operator_audit (transaction_id, created_at DESC, id DESC);
