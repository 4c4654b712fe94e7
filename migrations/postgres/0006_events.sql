-- Events (issue 25): what happened to something a key follows (a watched name's state change, a
-- webhook's test or disabling), kept for the key to read (`GET /v1/watches/{id}/events`) and
-- handed to webhook deliveries, which carry the event's id as `webhook-id`. An event's id is
-- stable: emitting the same occurrence again (a re-check repeated after a crash) is a no-op, so
-- no state change is ever announced twice under different ids.
CREATE TABLE events (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- order of emission: the cursor
    id          TEXT NOT NULL UNIQUE,                     -- "evt_" + 32 hex digits, stable
    key_id      TEXT NOT NULL REFERENCES client_keys (id),
    type        TEXT NOT NULL,                            -- e.g. domain.available
    subject     TEXT,                                     -- what it is about (a watch id); NULL: the key
    occurred_at TIMESTAMPTZ NOT NULL,
    data        JSONB NOT NULL CHECK (jsonb_typeof(data) = 'object'),
    dispatched  BOOLEAN NOT NULL DEFAULT FALSE            -- handed to the webhook deliveries yet
);
CREATE INDEX events_key ON events (key_id, seq);
CREATE INDEX events_subject ON events (subject, seq);
-- The webhook dispatcher's queue: events not yet fanned out to the key's webhooks. A flag, not a
-- cursor over seq: sequence values are taken before commit, so a cursor could pass over an event
-- whose transaction commits late.
CREATE INDEX events_undispatched ON events (seq) WHERE NOT dispatched;
