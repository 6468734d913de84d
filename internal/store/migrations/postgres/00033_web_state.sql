-- +goose Up
-- The web sites' state, shared by every instance so that any instance serves any
-- request (webkit): signed-in sessions, sign-in attempt counts, and the forms
-- already acted on.
--
-- A session is found by the SHA-256 of its cookie's token (a reader of the
-- database cannot ride one); subject names whose it is (a user, an operator), so
-- all of one person's sessions end at once. expires_at is the earlier of the idle
-- and the absolute end, moved on as the session is used.
CREATE TABLE web_sessions (
    token_hash text PRIMARY KEY,
    site       text NOT NULL,
    subject    text NOT NULL,
    csrf       text NOT NULL,
    data       text NOT NULL,
    created_at timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX web_sessions_subject_idx ON web_sessions (site, subject);
CREATE INDEX web_sessions_expires_idx ON web_sessions (expires_at);

-- Attempts (sign-ins, codes) counted per key in a window ending at window_end;
-- strikes is how many windows in a row ended full (the next is longer: back-off).
CREATE TABLE web_attempts (
    attempt_key text PRIMARY KEY,
    attempts    integer NOT NULL,
    strikes     integer NOT NULL,
    window_end  timestamptz NOT NULL
);
CREATE INDEX web_attempts_window_idx ON web_attempts (window_end);

-- Forms already acted on (a key page's create or roll), per scope (a partner):
-- bounded in number per scope and forgotten after a day.
CREATE TABLE web_forms (
    scope    text NOT NULL,
    form_key text NOT NULL,
    sent_at  timestamptz NOT NULL,
    PRIMARY KEY (scope, form_key)
);
CREATE INDEX web_forms_sent_idx ON web_forms (scope, sent_at);

-- +goose Down
DROP TABLE web_forms;
DROP TABLE web_attempts;
DROP TABLE web_sessions;
