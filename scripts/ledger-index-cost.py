#!/usr/bin/env python3
"""CPU per charge of the standalone ledger's schema variants, outside dsa (issue 29).

    python3 scripts/ledger-index-cost.py [CHARGES] [KEYS] [ROUNDS]   # defaults 60000 40 3

Replays what the standalone ledger writer does to SQLite (WAL, synchronous=NORMAL, foreign
keys on, batches of 7 charges padded to 8 rows by repeating the last one, ON CONFLICT DO NOTHING,
the usage trigger of migration 0010) on a database in /dev/shm, for the shipped schema and for
variants: without the (key_id, period, front, credits) index, with a narrower index, as a
WITHOUT ROWID table, and without the index but with aggregate rows kept by triggers. Prints the
process CPU time per charge, microseconds (the binding work of Python's sqlite3 is included and
the same in every variant, so compare the variants with each other, not with dsa).
"""
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid

TABLE = (
    "CREATE TABLE ledger_entries (event_id TEXT PRIMARY KEY, key_id TEXT NOT NULL REFERENCES client_keys (id), "
    "period TEXT NOT NULL, endpoint TEXT NOT NULL, credits INTEGER NOT NULL CHECK (credits > 0), "
    "charged_at TEXT NOT NULL, front TEXT NOT NULL DEFAULT '')"
)
SHIPPED_INDEX = "CREATE INDEX ledger_entries_key_period_front ON ledger_entries (key_id, period, front, credits)"
USAGE_TRIGGER = """CREATE TRIGGER ledger_entries_add_usage AFTER INSERT ON ledger_entries BEGIN
    INSERT INTO key_usage (key_id, period, used) VALUES (NEW.key_id, NEW.period, NEW.credits)
    ON CONFLICT (key_id, period) DO UPDATE SET used = used + excluded.used; END"""
BY_FRONT = [
    "CREATE TABLE key_usage_by_front (key_id TEXT NOT NULL, period TEXT NOT NULL, front TEXT NOT NULL, "
    "used INTEGER NOT NULL, PRIMARY KEY (key_id, period, front))",
    """CREATE TRIGGER ledger_entries_add_usage_by_front AFTER INSERT ON ledger_entries BEGIN
    INSERT INTO key_usage_by_front (key_id, period, front, used) VALUES (NEW.key_id, NEW.period, NEW.front, NEW.credits)
    ON CONFLICT (key_id, period, front) DO UPDATE SET used = used + excluded.used; END""",
]
DAILY = [
    "CREATE TABLE key_usage_daily (key_id TEXT NOT NULL, day TEXT NOT NULL, endpoint TEXT NOT NULL, "
    "credits INTEGER NOT NULL, entries INTEGER NOT NULL, PRIMARY KEY (key_id, day, endpoint))",
    """CREATE TRIGGER ledger_entries_add_daily AFTER INSERT ON ledger_entries BEGIN
    INSERT INTO key_usage_daily (key_id, day, endpoint, credits, entries)
    VALUES (NEW.key_id, substr(NEW.charged_at, 1, 10), NEW.endpoint, NEW.credits, 1)
    ON CONFLICT (key_id, day, endpoint) DO UPDATE SET credits = credits + excluded.credits, entries = entries + 1; END""",
]
VARIANTS = {
    "shipped": [TABLE, SHIPPED_INDEX],
    "no index": [TABLE],
    "index (key_id, period)": [TABLE, "CREATE INDEX ledger_entries_key_period ON ledger_entries (key_id, period)"],
    "WITHOUT ROWID": [TABLE + " WITHOUT ROWID", SHIPPED_INDEX],
    "no index, aggregates by trigger": [TABLE] + BY_FRONT + DAILY,
}
BATCH, ROWS = 7, 8


def per_charge_us(schema, charges, keys):
    directory = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        db = sqlite3.connect(os.path.join(tmp, "ledger.db"), isolation_level=None)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
            db.execute(f"PRAGMA {pragma}")
        db.execute("CREATE TABLE client_keys (id TEXT PRIMARY KEY)")
        key_ids = [str(uuid.uuid4()) for _ in range(keys)]
        db.executemany("INSERT INTO client_keys VALUES (?)", [(k,) for k in key_ids])
        db.execute(
            "CREATE TABLE key_usage (key_id TEXT NOT NULL, period TEXT NOT NULL, used INTEGER NOT NULL, "
            "PRIMARY KEY (key_id, period))"
        )
        for statement in schema + [USAGE_TRIGGER]:
            db.execute(statement)
        insert = (
            "INSERT INTO ledger_entries (event_id, key_id, period, endpoint, credits, charged_at, front) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * ROWS)
            + " ON CONFLICT (event_id) DO NOTHING"
        )
        # Time-ordered ids, as UUID v7 are: a millisecond-like prefix, random bits after it.
        rows = [
            (
                str(uuid.UUID(int=(i << 80) | random.getrandbits(80))),
                random.choice(key_ids),
                "2026-11",
                "check",
                1,
                "2026-11-29T10:00:00.123456Z",
                "standalone-0193f1c2a4b57c8e9d0f1a2b3c4d5e6f",
            )
            for i in range(charges)
        ]
        started = time.process_time()
        for i in range(0, charges, BATCH):
            batch = rows[i : i + BATCH]
            batch += [batch[-1]] * (ROWS - len(batch))
            db.execute(insert, [value for row in batch for value in row])
        elapsed = time.process_time() - started
        db.close()
    return elapsed / charges * 1e6


def main():
    given = [int(a) for a in sys.argv[1:4]]
    charges, keys, rounds = given + [60000, 40, 3][len(given) :]
    print(f"{charges} charges over {keys} keys, batches of {BATCH} padded to {ROWS} rows; CPU µs per charge")
    for name, schema in VARIANTS.items():
        runs = [per_charge_us(schema, charges, keys) for _ in range(rounds)]
        print(f"{name:34} " + "  ".join(f"{r:6.2f}" for r in runs))


if __name__ == "__main__":
    main()
