"""The change-only replay's ranking and publishing without Beam: where ``newsroom backfill --snapshots`` spends its CPU.

Two steps. ``--capture FILE`` runs the real backfill with ``--snapshots`` in this process (FnApiRunner, the local
default) on the input snapshots_bench.py uses (BASIL's dev set re-timed over 30 days) and pickles every event the
ranker's stateful DoFn receives (edition key, event). ``--replay FILE`` feeds them to
:class:`~transforms.editions.beam.ranking.RankEditionsFn` in replay mode with in-memory state, fires each edition's
timer in time order (editions in key order on a tie) and publishes every snapshot item through one
:class:`~transforms.editions.publish.snapshots.SnapshotPublisher` into a temporary embedded store; it prints the CPU
seconds of ranking and of publishing, the ranker's minute counts, the page versions and a SHA-256 of every stored
object (path and bytes), so two trees (base and head, change-only and ``--every_minute``) are compared by one line.
``--profile N`` prints cProfile's N costliest functions (cumulative).

    PYTHONPATH=<tree> .venv/bin/python benchmarks/snapshots_offline.py --capture /tmp/month.pkl [--embedder hash]
    PYTHONPATH=<tree> .venv/bin/python benchmarks/snapshots_offline.py --replay /tmp/month.pkl [--every_minute] [--profile 40]

A capture depends on the writer (the embedder), not on the ranker: capture once, replay it from each tree.
Prints, never asserts.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
import pickle
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the checkout: its tests' fakes
from snapshots_bench import DATA, page_versions, retimed  # noqa: E402


def capture(out: str, inp: str, embedder: str, span_days: float, limit: int) -> int:
    """Run the backfill with snapshots here, recording every (key, event) the ranker's DoFn receives."""
    import apache_beam as beam

    from pipelines import backfill
    from transforms.editions.beam import ranking

    fn_class = ranking.RankEditionsFn
    events, lock, process = [], threading.Lock(), fn_class.process

    def recording(  # the state parameters spelled out: Beam reads them from the signature
        self,
        element,
        inbox=beam.DoFn.StateParam(fn_class.INBOX),
        chain=beam.DoFn.StateParam(fn_class.CHAIN),
        memory=beam.DoFn.StateParam(fn_class.MEMORY),
        timer=beam.DoFn.TimerParam(fn_class.CYCLE),
    ):
        with lock:
            events.append(element)
        return process(self, element, inbox, chain, memory, timer)

    ranking.RankEditionsFn.process = recording
    with tempfile.TemporaryDirectory(prefix="snapshots-offline-") as tmp:
        src = inp
        if span_days > 0 or limit > 0:
            src = str(Path(tmp) / "input.jsonl")
            retimed(inp, Path(src), span_days, limit)
        argv = [f"--input={src}", f"--output={tmp}/run", f"--embedder={embedder}", f"--snapshots={tmp}/snap"]
        status = backfill.run(argv)
    with open(out, "wb") as f:
        pickle.dump(events, f)
    print(f"captured {len(events)} events (backfill exit {status}) into {out}")
    return 0


def _state() -> dict:
    from tests.transforms.fakes import Bag, Timer, Value  # the tests' stand-ins for Beam's state cells and timer

    return {"inbox": Bag(), "event_log": Bag(), "memory": Value(), "chain": Value(), "timer": Timer()}


def replay(events: list, root: Path, every_minute: bool) -> dict:
    """Rank and publish ``events`` into an embedded store at ``root``: CPU seconds and counts."""
    from apache_beam.utils.timestamp import Timestamp

    from stores import StoreConfig, open_stores
    from stores.controls import open_control_store
    from transforms.editions.beam.ranking import RankEditionsFn
    from transforms.editions.publish.snapshots import SnapshotPublisher
    from transforms.editions.vocabulary.settings import RankSettings

    config = StoreConfig(backend="embedded", data_dir=str(root))
    stores = open_stores(config)
    fn = RankEditionsFn(RankSettings(replay=True, change_only=not every_minute), config)
    fn.setup()
    publisher = SnapshotPublisher(stores, controls=open_control_store(config))
    states: dict[str, dict] = {}
    for key, event in events:
        s = states.setdefault(key, _state())
        fn.process((key, event), inbox=s["inbox"], chain=s["chain"], memory=s["memory"], timer=s["timer"])
    rank_s = publish_s = 0.0
    items = 0
    while True:
        due = [(s["timer"].at, key) for key, s in states.items() if s["timer"].at is not None]
        if not due:
            break
        at, key = min(due)
        s = states[key]
        s["timer"].at = None
        args = {k: s[k] for k in ("inbox", "event_log", "memory", "chain", "timer")}
        gen = fn.on_cycle(key=key, ts=Timestamp(micros=at * 1000), **args)
        while True:
            t0 = time.process_time()
            item = next(gen, None)
            t1 = time.process_time()
            rank_s += t1 - t0
            if item is None:
                break
            publisher.publish(item)
            publish_s += time.process_time() - t1
            items += 1
    return {"rank_s": rank_s, "publish_s": publish_s, "items": items, "tally": dict(fn.tally)}


def tree_digest(root: Path) -> tuple[str, int]:
    """SHA-256 over every stored object's path and bytes (sorted), and how many there are."""
    h, n = hashlib.sha256(), 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "snapshots" in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        n += 1
    return h.hexdigest(), n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--capture", help="Run the backfill here and pickle the ranker's input into FILE.")
    ap.add_argument("--replay", help="Replay a capture: rank and publish without Beam.")
    ap.add_argument("--input", default=str(DATA / "basil-dev.jsonl"), help="Capture: labelled JSONL (basil-dev).")
    ap.add_argument("--embedder", default="auto", help="Capture: backfill --embedder. Default: auto.")
    ap.add_argument("--span_days", type=float, default=30, help="Capture: re-time over N days (0: keep). Default 30.")
    ap.add_argument("--limit", type=int, default=0, help="Capture: only the first N articles. Default: 0 (all).")
    ap.add_argument("--every_minute", action="store_true", help="Replay: build every minute (the baseline).")
    ap.add_argument("--profile", type=int, default=0, help="Replay: print cProfile's N costliest functions.")
    args = ap.parse_args(argv)
    if bool(args.capture) == bool(args.replay):
        ap.error("give one of --capture FILE or --replay FILE")
    if args.capture:
        return capture(args.capture, args.input, args.embedder, args.span_days, args.limit)
    with open(args.replay, "rb") as f:
        events = pickle.load(f)
    with tempfile.TemporaryDirectory(prefix="snapshots-offline-") as tmp:
        prof = cProfile.Profile() if args.profile else None
        c0 = time.process_time()
        if prof:
            prof.enable()
        res = replay(events, Path(tmp), args.every_minute)
        if prof:
            prof.disable()
        cpu = time.process_time() - c0
        digest, objects = tree_digest(Path(tmp))
        pages, busiest = page_versions(Path(tmp))
    mode = "every minute" if args.every_minute else "change-only"
    print(
        f"{len(events)} events, {mode}: CPU {cpu:.1f} s (ranking {res['rank_s']:.1f} s, publishing "
        f"{res['publish_s']:.1f} s), {res['items']} items, minutes {res['tally']}"
    )
    print(f"stored {objects} objects, {pages} page versions (busiest {busiest}), sha256 {digest}")
    if prof:
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(args.profile)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
