-- dsa standalone schema (SQLite). The Postgres variant lives in migrations/postgres.
-- Client keys (spec §2.1): only a SHA-256 hash of the key is stored; the key is shown once.
CREATE TABLE client_keys (
    id                         TEXT PRIMARY KEY,          -- UUID v7
    key_hash                   TEXT NOT NULL UNIQUE,      -- hex SHA-256 of the full key
    fingerprint                TEXT NOT NULL,             -- short hash for logs and the CLI
    kind                       TEXT NOT NULL CHECK (kind IN ('embed', 'server')),
    state                      TEXT NOT NULL CHECK (state IN ('active', 'disabled', 'suspended')),
    plan                       TEXT NOT NULL,
    monthly_allowance          INTEGER NOT NULL CHECK (monthly_allowance >= 0),  -- credits
    pricing_enabled            INTEGER NOT NULL DEFAULT 0,
    show_purchase_button       INTEGER NOT NULL DEFAULT 0,
    default_commission_percent REAL,                      -- percent, NULL = none
    purchase_url               TEXT,
    allowed_origins            TEXT NOT NULL DEFAULT '[]', -- JSON array of origins
    label                      TEXT NOT NULL DEFAULT '',
    created_at                 TEXT NOT NULL
);

-- Settled usage per key per calendar month (UTC); the allowance resets because a new month is a
-- new row, no cron job needed (spec §3, §8).
CREATE TABLE key_usage (
    key_id  TEXT NOT NULL REFERENCES client_keys (id),
    period  TEXT NOT NULL,                                -- 'YYYY-MM'
    used    INTEGER NOT NULL DEFAULT 0,                   -- credits
    PRIMARY KEY (key_id, period)
);

-- One row per charge event; the unique event id makes applying an event idempotent.
CREATE TABLE ledger_entries (
    event_id   TEXT PRIMARY KEY,
    key_id     TEXT NOT NULL REFERENCES client_keys (id),
    period     TEXT NOT NULL,
    endpoint   TEXT NOT NULL,
    credits    INTEGER NOT NULL,
    charged_at TEXT NOT NULL,
    front      TEXT NOT NULL DEFAULT ''                  -- the front instance that charged
);
CREATE INDEX ledger_entries_key_period ON ledger_entries (key_id, period);
