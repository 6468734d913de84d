-- +goose Up
-- Who made an audited change: an operator (operator_id set), or the partnerd command
-- on a server (actor 'cli'), which acts as no operator (operator_id NULL).
ALTER TABLE operator_audit ADD COLUMN actor text NOT NULL DEFAULT 'operator';
ALTER TABLE operator_audit ALTER COLUMN operator_id DROP NOT NULL;
ALTER TABLE operator_audit ADD CONSTRAINT operator_audit_actor_check
    CHECK ((actor = 'operator') = (operator_id IS NOT NULL));

-- +goose Down
DELETE FROM operator_audit WHERE operator_id IS NULL;
ALTER TABLE operator_audit DROP CONSTRAINT operator_audit_actor_check;
ALTER TABLE operator_audit ALTER COLUMN operator_id SET NOT NULL;
ALTER TABLE operator_audit DROP COLUMN actor;
