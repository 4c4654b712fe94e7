-- Secrets generated once and shared by every process on this database (e.g. the demo-cookie
-- signing key), so sessions survive restarts and every front verifies every other's cookies.
CREATE TABLE shared_secrets (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
