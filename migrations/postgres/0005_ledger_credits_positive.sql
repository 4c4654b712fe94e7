-- A charge spends credits and never gives them back (issue 32: forged charges of -1000 credits
-- lowered a key's usage). The ledger consumer also terminates a non-positive event before it
-- reaches the database; this is the second wall.
--
-- NOT VALID: rows written before this migration are not re-checked, so a database that already
-- holds a forged row still starts. Look for them with
--   SELECT * FROM ledger_entries WHERE credits <= 0;
-- and, once handled, `ALTER TABLE ledger_entries VALIDATE CONSTRAINT ledger_entries_credits_positive;`.
ALTER TABLE ledger_entries
    ADD CONSTRAINT ledger_entries_credits_positive CHECK (credits > 0) NOT VALID;
