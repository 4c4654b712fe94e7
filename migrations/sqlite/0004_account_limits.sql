-- Issue 32: the operator's per-account cap on active keys of each kind (`dsa accounts
-- set-key-cap`); NULL: the cap of the account's plan (`policy.portal.key_caps`).
ALTER TABLE accounts ADD COLUMN key_cap INTEGER CHECK (key_cap IS NULL OR key_cap >= 0);

-- E-mail verification (with policy.portal.smtp set): an unverified account gets no key until the
-- link is followed. Accounts made before this migration count as verified.
ALTER TABLE accounts ADD COLUMN email_verified INTEGER NOT NULL DEFAULT 1;
CREATE TABLE email_verifications (
    token_hash TEXT PRIMARY KEY,                          -- SHA-256 of the link's token
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    expires_at INTEGER NOT NULL                           -- unix seconds
);
