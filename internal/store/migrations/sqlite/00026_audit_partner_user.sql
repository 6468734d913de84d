-- +goose Up
-- A partner's user on the dashboard is an audited actor (actor 'partner_user'):
-- partner_user_id names them, operator_id stays NULL. (SQLite cannot add a CHECK
-- in place, and a column with a foreign key could not be dropped again: the
-- store writes both from one field.) The index serves a
-- partner's activity page (its users' actions, newest first).
ALTER TABLE operator_audit ADD COLUMN partner_user_id TEXT;
CREATE INDEX operator_audit_partner_user_idx ON operator_audit (partner_user_id, created_at DESC, id DESC)
    WHERE partner_user_id IS NOT NULL;

-- +goose Down
DELETE FROM operator_audit WHERE partner_user_id IS NOT NULL;
DROP INDEX operator_audit_partner_user_idx;
ALTER TABLE operator_audit DROP COLUMN partner_user_id;
