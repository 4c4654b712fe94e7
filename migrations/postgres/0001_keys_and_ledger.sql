-- dsa fleet schema (Postgres). Same tables, columns and meaning as migrations/sqlite; ids stay TEXT
-- (UUID v7 strings) so both stores hand the same `String` ids to the code above them.

-- Client keys (spec §2.1): only a SHA-256 hash of the key is stored; the key is shown once.
CREATE TABLE client_keys (
    id                         TEXT PRIMARY KEY,          -- UUID v7
    key_hash                   TEXT NOT NULL UNIQUE,      -- hex SHA-256 of the full key
    fingerprint                TEXT NOT NULL,             -- short hash for logs and the CLI
    kind                       TEXT NOT NULL CHECK (kind IN ('embed', 'server')),
    state                      TEXT NOT NULL CHECK (state IN ('active', 'disabled', 'suspended')),
    plan                       TEXT NOT NULL,
    monthly_allowance          BIGINT NOT NULL CHECK (monthly_allowance >= 0),  -- credits
    pricing_enabled            BOOLEAN NOT NULL DEFAULT FALSE,
    show_purchase_button       BOOLEAN NOT NULL DEFAULT FALSE,
    default_commission_percent DOUBLE PRECISION,          -- percent, NULL = none
    purchase_url               TEXT,
    allowed_origins            JSONB NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(allowed_origins) = 'array'),
    label                      TEXT NOT NULL DEFAULT '',
    created_at                 TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- `dsa keys … <fingerprint>` and `set_key_state` look keys up by fingerprint.
CREATE INDEX client_keys_fingerprint ON client_keys (fingerprint);

-- Settled usage per key per calendar month (UTC); the allowance resets because a new month is a
-- new row, no cron job needed (spec §3, §8).
CREATE TABLE key_usage (
    key_id  TEXT NOT NULL REFERENCES client_keys (id),
    period  TEXT NOT NULL,                                -- 'YYYY-MM'
    used    BIGINT NOT NULL DEFAULT 0,                    -- credits
    PRIMARY KEY (key_id, period)
);

-- One row per charge event; the unique event id makes applying an event idempotent.
CREATE TABLE ledger_entries (
    event_id   TEXT PRIMARY KEY,                          -- UUID v7
    key_id     TEXT NOT NULL REFERENCES client_keys (id),
    period     TEXT NOT NULL,
    endpoint   TEXT NOT NULL,
    credits    BIGINT NOT NULL,
    charged_at TIMESTAMPTZ NOT NULL,
    front      TEXT NOT NULL DEFAULT '',                  -- the front instance that charged
    settled_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp() -- when the ledger applied it (settle lag)
);
-- One index serves both lookups: (key_id, period) is its prefix (ledger_count, usage_by_endpoint),
-- the full key serves a front's own settled sum (PgStore::settled_by_front). A second
-- (key_id, period) index would only slow every ledger insert down.
CREATE INDEX ledger_entries_key_period_front ON ledger_entries (key_id, period, front);
