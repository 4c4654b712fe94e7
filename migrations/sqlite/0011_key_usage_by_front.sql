-- Postgres's 0011 adds key_usage_by_front, the settled credits per key, month and front, which each
-- fleet front re-reads every second for every key it serves. SQLite keeps no such table (a second
-- usage row kept on every charge would cost the standalone ledger on each cached check); a front
-- on SQLite sums its own settled charges, which `dsa mcp` beside `dsa serve` does every
-- `fleet.credits_refresh_ms` for each key it serves. The ledger's (key_id, period) index becomes
-- (key_id, period, front, credits): the same one index per charge, which now also covers that
-- sum, so it reads the front's own entries only (a `dsa mcp` process's few), not every entry of
-- the key's month.
DROP INDEX IF EXISTS ledger_entries_key_period;
CREATE INDEX ledger_entries_key_period_front ON ledger_entries (key_id, period, front, credits);
