-- +goose Up
-- A partner's user on the dashboard is an audited actor (actor 'partner_user'):
-- partner_user_id names them, operator_id stays NULL. The index serves a
-- partner's activity page (its users' actions, newest first).
ALTER TABLE operator_audit ADD COLUMN partner_user_id uuid REFERENCES partner_users (id);
ALTER TABLE operator_audit ADD CONSTRAINT operator_audit_partner_user_check
    CHECK ((actor = 'partner_user') = (partner_user_id IS NOT NULL));
CREATE INDEX operator_audit_partner_user_idx ON operator_audit (partner_user_id, created_at DESC, id DESC)
    WHERE partner_user_id IS NOT NULL;

-- +goose Down
DELETE FROM operator_audit WHERE partner_user_id IS NOT NULL;
DROP INDEX operator_audit_partner_user_idx;
ALTER TABLE operator_audit DROP CONSTRAINT operator_audit_partner_user_check;
ALTER TABLE operator_audit DROP COLUMN partner_user_id;
