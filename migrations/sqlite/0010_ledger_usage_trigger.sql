-- The usage follows the ledger inside SQLite: every charge entry inserted adds its credits to the
-- key's usage of its period, in the inserting statement itself. An entry skipped by ON CONFLICT
-- (an event already applied) fires nothing. The standalone ledger writer no longer reads the
-- inserted rows back (RETURNING) to add them up in a second statement (issue 29: a cached check's
-- ledger cost). Postgres keeps its explicit statements (migrations/postgres).
CREATE TRIGGER ledger_entries_add_usage AFTER INSERT ON ledger_entries
BEGIN
    INSERT INTO key_usage (key_id, period, used) VALUES (NEW.key_id, NEW.period, NEW.credits)
    ON CONFLICT (key_id, period) DO UPDATE SET used = used + excluded.used;
END;
