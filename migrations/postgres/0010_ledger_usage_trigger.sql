-- SQLite's 0010 adds a trigger that keeps key_usage in step with ledger_entries inside the
-- inserting statement (the standalone ledger writer's cost, issue 29). Postgres keeps its explicit
-- statements (the ledger consumer inserts the entries, then adds the usage of the rows inserted, in
-- one transaction, locks in a fixed order): nothing changes here but the table's description.
COMMENT ON TABLE key_usage IS
    'Settled credits per key per month (UTC): the sum of the key''s ledger_entries credits of the period.';
