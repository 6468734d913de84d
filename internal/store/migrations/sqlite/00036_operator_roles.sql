-- +goose Up
-- Operators as a team: each holds roles (comma-separated, such as 'treasury,compliance');
-- those that existed before roles are admins, as they could do everything.
ALTER TABLE operators ADD COLUMN roles TEXT NOT NULL DEFAULT 'admin';

-- An action approved by a second operator names its proposer on its audit row (the
-- row's operator is the approver); the partnerd command names the host's user.
ALTER TABLE operator_audit ADD COLUMN proposer_id TEXT REFERENCES operators (id);
ALTER TABLE operator_audit ADD COLUMN cli_user TEXT;

-- Actions proposed by one operator that wait for a second (four eyes): the request
-- exactly as sent, replayed as the approver when approved. A proposal is pending
-- until decided or past expires_at (read as expired). One per proposer, operation and
-- Idempotency-Key: a retried proposal is the same proposal.
CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,
    action          TEXT NOT NULL,
    operation       TEXT NOT NULL,
    method          TEXT NOT NULL,
    path            TEXT NOT NULL,
    body            TEXT NOT NULL,
    summary         TEXT NOT NULL,
    required_role   TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'approving', 'approved', 'rejected', 'failed')),
    proposed_by     TEXT NOT NULL REFERENCES operators (id),
    idempotency_key TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    proposed_at     DATETIME NOT NULL,
    expires_at      DATETIME NOT NULL,
    decided_by      TEXT REFERENCES operators (id),
    decided_at      DATETIME,
    note            TEXT,
    failure         TEXT,
    result          TEXT,
    UNIQUE (proposed_by, operation, idempotency_key)
);
CREATE INDEX approvals_proposed_idx ON approvals (proposed_at DESC, id DESC);
CREATE INDEX approvals_status_idx ON approvals (status, proposed_at DESC, id DESC);

-- +goose Down
DROP TABLE approvals;
ALTER TABLE operator_audit DROP COLUMN cli_user;
-- proposer_id stays: SQLite cannot drop a column a foreign key names (it reads null).
ALTER TABLE operators DROP COLUMN roles;
