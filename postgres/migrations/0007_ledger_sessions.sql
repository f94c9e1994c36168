-- Agent runs (docs/agent-runs.md): the run a call belongs to
-- (Groundhog-Session) and the run that started it
-- (Groundhog-Parent-Session); '' when the client sent none.
ALTER TABLE ledger
    ADD COLUMN session        text NOT NULL DEFAULT '',
    ADD COLUMN parent_session text NOT NULL DEFAULT '';
