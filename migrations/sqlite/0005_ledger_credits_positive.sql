-- A charge spends credits and never gives them back (issue 32; the Postgres variant explains).
-- SQLite cannot add a CHECK to an existing table: the table is rebuilt (SQLite manual, "ALTER
-- TABLE", the 12-step procedure; nothing references ledger_entries, so no foreign key is broken).
CREATE TABLE ledger_entries_new (
    event_id   TEXT PRIMARY KEY,
    key_id     TEXT NOT NULL REFERENCES client_keys (id),
    period     TEXT NOT NULL,
    endpoint   TEXT NOT NULL,
    credits    INTEGER NOT NULL CHECK (credits > 0),
    charged_at TEXT NOT NULL,
    front      TEXT NOT NULL DEFAULT ''                  -- the front instance that charged
);
-- Standalone charges come from the process itself, never from the network: no non-positive row
-- can exist, and one would make this migration fail loudly rather than vanish.
INSERT INTO ledger_entries_new (event_id, key_id, period, endpoint, credits, charged_at, front)
    SELECT event_id, key_id, period, endpoint, credits, charged_at, front FROM ledger_entries;
DROP TABLE ledger_entries;
ALTER TABLE ledger_entries_new RENAME TO ledger_entries;
CREATE INDEX ledger_entries_key_period ON ledger_entries (key_id, period);
