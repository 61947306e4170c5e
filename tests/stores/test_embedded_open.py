"""Several processes opening one fresh embedded store at the same moment (two `newsroom backfill` runs on one
--store, the origin and the job starting together) must all get a working connection.

Switching a new SQLite file to WAL takes an exclusive lock, and SQLite answers a competing switch with "database
is locked" without calling the busy handler, so ``PRAGMA busy_timeout`` alone did not cover it: CI once failed the
two-backfill namespace test on exactly that instead of refusing the second run. On the code before the fix this
test failed in 9 of 30 rounds of 6 openers on a 2-core machine; it runs 12 rounds of 6 here.
"""

import multiprocessing as mp
import time

import pytest

ROUNDS = 12
OPENERS = 6


def _open(path: str, start: float, out) -> None:
    from stores.embedded import Database

    while time.time() < start:
        pass
    try:
        db = Database(path)
        db.connect().execute("SELECT count(*) FROM sqlite_master").fetchone()
        out.put(db.connect().execute("PRAGMA journal_mode").fetchone()[0])
    except Exception as exc:  # the assertion below reports it
        out.put(repr(exc))


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_openers_racing_on_a_fresh_file_all_get_a_wal_connection(tmp_path, round_):
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start = time.time() + 1.5  # spawn start-up is ~0.5 s: everyone waits, then opens together
    procs = [ctx.Process(target=_open, args=(str(tmp_path / "newsroom.sqlite"), start, out)) for _ in range(OPENERS)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == ["wal"] * OPENERS
