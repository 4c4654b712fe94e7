-- Issue 32: the operator's per-account cap on active keys of each kind (`dsa accounts
-- set-key-cap`); NULL: the cap of the account's plan (`policy.portal.key_caps`). Same column
-- and meaning as migrations/sqlite/0004_account_key_caps.sql.
ALTER TABLE accounts ADD COLUMN key_cap BIGINT CHECK (key_cap IS NULL OR key_cap >= 0);
