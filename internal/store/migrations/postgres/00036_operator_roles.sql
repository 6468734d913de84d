-- +goose Up
-- Operators as a team: each holds roles (comma-separated, such as 'treasury,compliance');
-- those that existed before roles are admins, as they could do everything.
ALTER TABLE operators ADD COLUMN roles text NOT NULL DEFAULT 'admin';

-- An action approved by a second operator names its proposer on its audit row (the
-- row's operator is the approver); the partnerd command names the host's user.
ALTER TABLE operator_audit ADD COLUMN proposer_id uuid REFERENCES operators (id);
ALTER TABLE operator_audit ADD COLUMN cli_user text;

-- Actions proposed by one operator that wait for a second (four eyes): the request
-- exactly as sent, replayed as the approver when approved. A proposal is pending
-- until decided or past expires_at (read as expired). One per proposer, operation and
-- Idempotency-Key: a retried proposal is the same proposal.
CREATE TABLE approvals (
    id              uuid PRIMARY KEY,
    action          text NOT NULL,
    operation       text NOT NULL,
    method          text NOT NULL,
    path            text NOT NULL,
    body            text NOT NULL,
    summary         text NOT NULL,
    required_role   text NOT NULL,
    status          text NOT NULL CHECK (status IN ('pending', 'approving', 'approved', 'rejected', 'failed')),
    proposed_by     uuid NOT NULL REFERENCES operators (id),
    idempotency_key text NOT NULL,
    fingerprint     text NOT NULL,
    proposed_at     timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    decided_by      uuid REFERENCES operators (id),
    decided_at      timestamptz,
    note            text,
    failure         text,
    result          text,
    UNIQUE (proposed_by, operation, idempotency_key)
);
CREATE INDEX approvals_proposed_idx ON approvals (proposed_at DESC, id DESC);
CREATE INDEX approvals_status_idx ON approvals (status, proposed_at DESC, id DESC);

-- +goose Down
DROP TABLE approvals;
ALTER TABLE operator_audit DROP COLUMN cli_user;
ALTER TABLE operator_audit DROP COLUMN proposer_id;
ALTER TABLE operators DROP COLUMN roles;
