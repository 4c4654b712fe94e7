-- The account portal (/account): owners, their sessions, password-reset tokens, and which account
-- owns a key. Same tables and meaning as migrations/sqlite/0003_accounts.sql; instants that are
-- compared (expiries) are unix seconds (BIGINT) in both, so both stores share the Rust code.
CREATE TABLE accounts (
    id            TEXT PRIMARY KEY,                       -- UUID v7
    email         TEXT NOT NULL UNIQUE,                   -- trimmed, lower-cased
    display_name  TEXT NOT NULL DEFAULT '',
    password_hash TEXT NOT NULL,                          -- argon2id PHC string
    state         TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled')),
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Server-side sessions: the cookie carries a random token, the table its SHA-256. Deleting a row
-- revokes the session.
CREATE TABLE account_sessions (
    token_hash   TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    csrf_token   TEXT NOT NULL,
    created_at   BIGINT NOT NULL,                         -- unix seconds (absolute expiry)
    last_seen_at BIGINT NOT NULL                          -- unix seconds (idle expiry)
);
CREATE INDEX account_sessions_account ON account_sessions (account_id);

-- One-time password-reset tokens (SHA-256 of the token; the link carries the token).
CREATE TABLE password_resets (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    expires_at BIGINT NOT NULL                            -- unix seconds
);

ALTER TABLE client_keys ADD COLUMN account_id TEXT REFERENCES accounts (id);
ALTER TABLE client_keys ADD COLUMN previous_key_hash TEXT;
ALTER TABLE client_keys ADD COLUMN previous_valid_until BIGINT;
CREATE INDEX client_keys_account ON client_keys (account_id);
CREATE INDEX client_keys_previous_hash ON client_keys (previous_key_hash) WHERE previous_key_hash IS NOT NULL;
