"""The per-reader write budget (and every other token bucket in a store: publisher pings, CDN purges) is exact
under concurrency: over any stretch of time, the grants never exceed the burst plus what the rate refilled.

The leak this pins: a taker read the clock, then waited for the store's lock; meanwhile another taker wrote a later
refill time, and the first one wrote its older time back, so the next taker was refilled for a stretch already
paid for (169 events accepted against a budget of <= 85 with 8 threads).
"""

from __future__ import annotations

import multiprocessing
import threading
import time

from stores.base import bucket_step
from stores.embedded import Database, take_tokens
from stores.profiles import open_profile_store

RATE, BURST = 5.0, 20.0


def _hammer(take, threads: int, seconds: float) -> tuple[int, float]:
    """(grants, elapsed s) of ``threads`` threads taking tokens as fast as they can for ``seconds``."""
    granted = [0] * threads
    stop = time.time() + seconds

    def run(i: int) -> None:
        while time.time() < stop:
            if take()[0]:
                granted[i] += 1

    start = time.time()
    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(granted), time.time() - start


def _bound(elapsed_s: float) -> float:
    """What a full bucket can grant over ``elapsed_s`` (one token of slack for the refill's float sums)."""
    return BURST + RATE * elapsed_s + 1


def test_a_stale_clock_never_moves_the_refill_time_back():
    """A taker whose clock reading is older than the stored refill time (it waited for the lock) gets no refill,
    and must not hand the stretch it missed to the next taker."""
    state, ok, _ = bucket_step(None, 1.0, 1.0, 10_000)
    assert ok
    state, ok, _ = bucket_step(state, 1.0, 1.0, 11_000)
    assert ok
    state, ok, _ = bucket_step(state, 1.0, 1.0, 10_500)  # read its clock at 10.5 s, got the lock after 11 s
    assert not ok and state["at"] == 11_000
    state, ok, _ = bucket_step(state, 1.0, 1.0, 11_500)  # half a token since 11 s: not one
    assert not ok


def test_reader_budget_is_exact_with_eight_threads(store_config):
    profiles = [open_profile_store(store_config) for _ in range(2)]  # two handles: two workers of one origin
    calls = [0]

    def take():
        calls[0] += 1
        return profiles[calls[0] % 2].take_token("mallory", RATE, BURST)

    granted, elapsed = _hammer(take, 8, 1.5)
    assert granted <= _bound(elapsed), (granted, elapsed)
    assert granted >= BURST  # the bucket started full


def _process_takes(path: str, seconds: float, out) -> None:
    db = Database(path)
    n, stop = 0, time.time() + seconds
    while time.time() < stop:
        if take_tokens(db, "reader:mallory", RATE, BURST)[0]:
            n += 1
    out.put(n)


def test_reader_budget_is_exact_across_processes(tmp_path):
    """Origin workers are processes sharing the SQLite file: the same bound holds across them."""
    path = str(tmp_path / "newsroom.sqlite3")
    Database(path)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = time.time()
    procs = [ctx.Process(target=_process_takes, args=(path, 1.5, out)) for _ in range(4)]
    for p in procs:
        p.start()
    granted = sum(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    elapsed = time.time() - start
    assert granted <= _bound(elapsed), (granted, elapsed)
    assert granted >= BURST
