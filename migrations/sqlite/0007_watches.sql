-- Watches (issue 25): a key follows a registrable domain's lifecycle (registered → expiring →
-- redemption → pending delete → available) and gets an event for each change. Instants are unix
-- seconds (BIGINT in both dialects), so due times compare as numbers in every store.
CREATE TABLE watches (
    id                TEXT PRIMARY KEY,                    -- "wch_" + 32 hex digits (UUID v7: time-ordered, the list cursor)
    key_id            TEXT NOT NULL REFERENCES client_keys (id),
    domain            TEXT NOT NULL,                       -- registrable domain, A-label
    events            TEXT NOT NULL DEFAULT '[]',          -- JSON array: the event types the key wants
    note              TEXT NOT NULL DEFAULT '',
    state             TEXT NOT NULL DEFAULT 'unknown',     -- lifecycle state at the last definitive check
    epp_status        TEXT NOT NULL DEFAULT '[]',          -- JSON array: EPP statuses at the last check
    expires_at        BIGINT,                              -- registry's expiry date, when published
    predicted_drop_at BIGINT,                              -- earliest time the name can become free
    evidence          TEXT NOT NULL DEFAULT '',            -- the last definitive check's evidence
    transitions       BIGINT NOT NULL DEFAULT 0,           -- state changes recorded so far (event id ordinal)
    expiring_for      BIGINT,                              -- the expiry date domain.expiring was emitted for
    last_checked_at   BIGINT,                              -- last check with a definitive answer
    next_check_at     BIGINT NOT NULL,                     -- when the scheduler re-checks it
    failures          BIGINT NOT NULL DEFAULT 0,           -- re-checks in a row without a definitive answer
    lease_owner       TEXT,                                -- the scheduler process re-checking it now
    lease_until       BIGINT,                              -- its lease ends (a dead process's lease expires)
    charged_period    TEXT NOT NULL,                       -- last billing month (YYYY-MM) whose fee was charged
    created_at        BIGINT NOT NULL
);
CREATE UNIQUE INDEX watches_key_domain ON watches (key_id, domain);
CREATE INDEX watches_due ON watches (next_check_at);
