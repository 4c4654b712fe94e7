-- Webhooks (issue 25): where a key's events are delivered, and every delivery and attempt. Same
-- tables and columns as migrations/postgres/0008_webhooks.sql. Instants are unix milliseconds
-- (BIGINT) in both dialects: the delivery loop compares them (due, lease expired) and its clock
-- is injectable, so they are plain numbers rather than each dialect's time type.
CREATE TABLE webhooks (
    id                    TEXT PRIMARY KEY,               -- "wh_" + 32 hex digits
    key_id                TEXT NOT NULL REFERENCES client_keys (id),
    url                   TEXT NOT NULL,                  -- https URL (checked at registration and at each attempt)
    event_types           TEXT NOT NULL,                  -- JSON array of event types; [] = every type
    description           TEXT NOT NULL DEFAULT '',
    secret                TEXT NOT NULL,                  -- "whsec_" + base64 (Standard Webhooks)
    previous_secret       TEXT,                           -- still signed with until previous_secret_until_ms
    previous_secret_until_ms BIGINT,
    state                 TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled', 'deleted')),
    disabled_reason       TEXT,
    failing_since_ms      BIGINT,                         -- first failed attempt since the last success
    created_at_ms         BIGINT NOT NULL
);
CREATE INDEX webhooks_key ON webhooks (key_id, created_at_ms);

-- One delivery of one event to one webhook: created by the fan-out, retried until delivered or
-- given up. The event id is the `webhook-id` of every attempt.
CREATE TABLE webhook_deliveries (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,  -- cursor of GET …/deliveries
    id               TEXT NOT NULL UNIQUE,               -- "dlv_" + 32 hex digits
    webhook_id       TEXT NOT NULL REFERENCES webhooks (id),
    event_id         TEXT NOT NULL REFERENCES events (id),
    state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms  BIGINT NOT NULL,                    -- due from (pending only)
    lease_owner      TEXT,                               -- the claim of the loop attempting it now
    lease_until_ms   BIGINT NOT NULL DEFAULT 0,          -- the claim expires then (a killed process's claim too)
    last_status      INTEGER,                            -- HTTP status of the last attempt, if one came
    last_error       TEXT,
    last_latency_ms  BIGINT,
    last_attempt_ms  BIGINT,
    created_at_ms    BIGINT NOT NULL,
    delivered_at_ms  BIGINT,
    UNIQUE (event_id, webhook_id)
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE state = 'pending';

-- Every attempt of a delivery (GET …/deliveries shows them).
CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id),
    attempt     INTEGER NOT NULL,                        -- 1, 2, …
    at_ms       BIGINT NOT NULL,
    status      INTEGER,                                 -- HTTP status, when an answer came
    error       TEXT,                                    -- why it failed (timeout, refused address, …)
    latency_ms  BIGINT NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);
