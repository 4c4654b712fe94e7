-- Bulk jobs (issue 26): up to 100,000 names checked asynchronously for one key. Same tables and
-- columns as migrations/sqlite/0009_bulk_jobs.sql. Instants are unix milliseconds (BIGINT).

-- One row per job. `held` credits count against the key's allowance while the job is open
-- (queued or running), minus what the job's charges already settled (ledger entries whose
-- `front` is 'bulk-job:<id>'), so every front sees the hold (credits.rs, `read_others`).
CREATE TABLE bulk_jobs (
    id          TEXT PRIMARY KEY,                        -- UUID v7
    key_id      TEXT NOT NULL REFERENCES client_keys (id),
    period      TEXT NOT NULL,                           -- 'YYYY-MM' of the hold and every charge
    state       TEXT NOT NULL CHECK (state IN ('uploading', 'queued', 'running', 'done', 'cancelled', 'failed')),
    received    BIGINT  NOT NULL DEFAULT 0,              -- entries received
    total       BIGINT  NOT NULL DEFAULT 0,              -- distinct valid names
    invalid     BIGINT  NOT NULL DEFAULT 0,              -- entries rejected
    held        BIGINT  NOT NULL DEFAULT 0,              -- credits held at submission
    checked     BIGINT  NOT NULL DEFAULT 0,              -- names with a final result
    charged     BIGINT  NOT NULL DEFAULT 0,              -- credits charged (1 per definitive verdict)
    options     TEXT NOT NULL DEFAULT '{}',              -- the check options (JSON)
    error       TEXT,
    created_at  BIGINT  NOT NULL,
    started_at  BIGINT,
    finished_at BIGINT,
    expires_at  BIGINT,                                 -- results deleted after this
    lease_owner TEXT,                                    -- the runner working on it
    lease_until BIGINT  NOT NULL DEFAULT 0               -- another runner may take it after this
);
CREATE INDEX bulk_jobs_key ON bulk_jobs (key_id, created_at);
CREATE INDEX bulk_jobs_state ON bulk_jobs (state, lease_until);

-- One row per entry received. `domain` is NULL for a rejected entry; a name repeated after
-- normalisation is stored once (the unique index). `done_seq` numbers results in the order
-- they were written: the results cursor.
CREATE TABLE bulk_job_items (
    job_id    TEXT NOT NULL REFERENCES bulk_jobs (id) ON DELETE CASCADE,
    seq       BIGINT  NOT NULL,                          -- order of the entry in the upload
    input     TEXT NOT NULL,
    domain    TEXT,
    registry  TEXT NOT NULL DEFAULT '',                  -- the registry host asked for it
    state     TEXT NOT NULL CHECK (state IN ('pending', 'done', 'invalid')),
    attempts  BIGINT  NOT NULL DEFAULT 0,
    status    TEXT,                                      -- verdict status once done ('unknown': none)
    charged   BIGINT  NOT NULL DEFAULT 0,                -- 1 when the name was charged
    done_seq  BIGINT,
    result    TEXT,                                      -- the result row (JSON)
    PRIMARY KEY (job_id, seq)
);
CREATE UNIQUE INDEX bulk_job_items_domain ON bulk_job_items (job_id, domain);
CREATE UNIQUE INDEX bulk_job_items_done ON bulk_job_items (job_id, done_seq);
CREATE INDEX bulk_job_items_pending ON bulk_job_items (job_id, state, registry, seq);
