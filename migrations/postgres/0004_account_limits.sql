-- Issue 32: the operator's per-account cap on active keys of each kind (`dsa accounts
-- set-key-cap`); NULL: the cap of the account's plan (`policy.portal.key_caps`). Same column
-- and meaning as migrations/sqlite/0004_account_limits.sql.
ALTER TABLE accounts ADD COLUMN key_cap BIGINT CHECK (key_cap IS NULL OR key_cap >= 0);

-- E-mail verification (with policy.portal.smtp set): an unverified account gets no key until the
-- link is followed. Accounts made before this migration count as verified.
ALTER TABLE accounts ADD COLUMN email_verified BOOLEAN NOT NULL DEFAULT TRUE;
CREATE TABLE email_verifications (
    token_hash TEXT PRIMARY KEY,                          -- SHA-256 of the link's token
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    expires_at BIGINT NOT NULL                            -- unix seconds
);
