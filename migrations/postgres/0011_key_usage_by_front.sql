-- Settled credits per key, month and front instance (issue 29). A fleet front re-reads, every
-- `fleet.credits_refresh_ms` for each key it serves, the credits the *other* fronts settled: the
-- key's usage minus its own settled charges. That second figure was a SUM over the front's
-- ledger entries of the month, so the read grew with every charge (a front charging 6,000 a second
-- made Postgres fetch a million index entries a second by the end of a minute). The ledger
-- consumer now adds each settled batch to this table in the transaction that inserts the entries
-- (after key_usage, locks in a fixed order), and the read is one row.
--
-- Fronts include `bulk-job:<id>` (a bulk job's charges, subtracted from its hold).
--
-- Upgrade: ledger consumers first (they keep this table); the backfill below counts what was
-- settled before. A consumer of an older version settling meanwhile leaves its charges out of this
-- table: a front then reads the others' part as larger than it is and refuses early, never late.
CREATE TABLE IF NOT EXISTS key_usage_by_front (
    key_id  TEXT NOT NULL REFERENCES client_keys (id),
    period  TEXT NOT NULL,                                -- 'YYYY-MM'
    front   TEXT NOT NULL,                                -- ledger_entries.front
    used    BIGINT NOT NULL DEFAULT 0,                    -- credits
    PRIMARY KEY (key_id, period, front)
);
COMMENT ON TABLE key_usage_by_front IS
    'Settled credits per key, month (UTC) and charging front: the sum of ledger_entries credits of each (key_id, period, front).';

INSERT INTO key_usage_by_front (key_id, period, front, used)
SELECT key_id, period, front, SUM(credits) FROM ledger_entries GROUP BY key_id, period, front
ON CONFLICT (key_id, period, front) DO NOTHING;
