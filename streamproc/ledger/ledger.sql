-- The run ledger: one row per hand-off step that finished (streamproc/ledger/ledger.py).
-- A step is recorded after it is durable (a committed transaction, a fsynced checkpoint, a DeleteRecords answer)
-- and before the next begins; a re-run skips every step with a row here and does the rest.
CREATE TABLE IF NOT EXISTS handoff_steps (
    plan_id     TEXT    NOT NULL,   -- hash of the plan's JSON (the process step's plan id)
    kind        TEXT    NOT NULL,   -- 'publish' | 'checkpoint' | 'purge'
    subject     TEXT    NOT NULL,   -- the task id (publish, checkpoint) or the topic-partition (purge)
    detail      TEXT    NOT NULL,   -- JSON: what the step did (offsets committed, checkpoint entries, purge offset)
    finished_at TEXT    NOT NULL,   -- UTC, ISO 8601
    PRIMARY KEY (plan_id, kind, subject)
);
