-- The account portal (/account): owners, their sessions, password-reset tokens, and which account
-- owns a key. Instants that are compared (expiries) are unix seconds (INTEGER): RFC 3339 text does
-- not sort correctly when fractional seconds vary.
CREATE TABLE accounts (
    id            TEXT PRIMARY KEY,                       -- UUID v7
    email         TEXT NOT NULL UNIQUE,                   -- trimmed, lower-cased
    display_name  TEXT NOT NULL DEFAULT '',
    password_hash TEXT NOT NULL,                          -- argon2id PHC string
    state         TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled')),
    created_at    TEXT NOT NULL                           -- RFC 3339, UTC
);

-- Server-side sessions: the cookie carries a random token, the table its SHA-256 (a database
-- leak yields no usable cookie). Deleting a row revokes the session.
CREATE TABLE account_sessions (
    token_hash   TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    csrf_token   TEXT NOT NULL,                           -- echoed by every form of the session
    created_at   INTEGER NOT NULL,                        -- unix seconds (absolute expiry)
    last_seen_at INTEGER NOT NULL                         -- unix seconds (idle expiry)
);
CREATE INDEX account_sessions_account ON account_sessions (account_id);

-- One-time password-reset tokens (SHA-256 of the token; the link carries the token).
CREATE TABLE password_resets (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    expires_at INTEGER NOT NULL                           -- unix seconds
);

-- Keys created in the portal belong to an account (NULL: an operator key from `dsa keys create`).
ALTER TABLE client_keys ADD COLUMN account_id TEXT REFERENCES accounts (id);
-- A rolled key keeps its id (and its month's usage); its old secret still works until
-- previous_valid_until (unix seconds), the roll's grace period.
ALTER TABLE client_keys ADD COLUMN previous_key_hash TEXT;
ALTER TABLE client_keys ADD COLUMN previous_valid_until INTEGER;
CREATE INDEX client_keys_account ON client_keys (account_id);
CREATE INDEX client_keys_previous_hash ON client_keys (previous_key_hash);
