"""What checking every read against the reader's delete and pause versions costs the embedded profile store.

The fold (serving/personal/readers.py) appends each reader's reads with ``ProfileStore.append_reads``, which now reads the
profile document and drops what was accepted before a delete or during a pause inside the same transaction
(stores/profile_versions.py). The baseline, run in the same command on the same kind of file, is the append as it
was before (the inserts and the trim in one transaction, no check). Prints reads per second for both and the ratio.

    python benchmarks/profile_versions_bench.py [--readers 400] [--reads 5]

Writes only into a temporary folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stores import StoreConfig, open_store  # noqa: E402
from stores.profile_versions import now_ms, set_paused  # noqa: E402
from stores.profiles import READS_KEPT, dumps, read_key  # noqa: E402


def unchecked_append(store, reader_id: str, reads: list[dict]) -> None:
    """The append before the version checks (the baseline)."""
    rows = [(reader_id, int(r["at"]), read_key(r), dumps(r)) for r in reads]
    with store.db.transaction() as conn:
        conn.executemany("INSERT OR REPLACE INTO profile_events VALUES (?,?,?,?)", rows)
        conn.execute(
            "DELETE FROM profile_events WHERE reader_id=? AND (at, rkey) NOT IN "
            "(SELECT at, rkey FROM profile_events WHERE reader_id=? ORDER BY at DESC, rkey DESC LIMIT ?)",
            (reader_id, reader_id, READS_KEPT),
        )


def batches(readers: int, reads: int, tag: str) -> list[tuple[str, list[dict]]]:
    t = now_ms()
    return [
        (
            f"{tag}{i}",
            [
                {"event_id": f"{tag}{i}-{k}", "story_id": str(k), "at": t - k, "kind": "READ", "accepted_at": t}
                for k in range(reads)
            ],
        )
        for i in range(readers)
    ]


def timed(store, work, append) -> float:
    start = time.perf_counter()
    for reader, reads in work:
        append(store, reader, reads)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--readers", type=int, default=400)
    ap.add_argument("--reads", type=int, default=5, help="reads per reader per fold")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store("profiles", StoreConfig(data_dir=tmp))
        for i in range(0, args.readers, 4):  # a quarter of the readers have a profile with pause intervals
            store.update(f"c{i}", lambda d: set_paused(d, True, now_ms() - 10_000))
            store.update(f"c{i}", lambda d: set_paused(d, False, now_ms() - 5_000))
        timed(store, batches(50, args.reads, "w"), unchecked_append)  # warm the file and the page cache
        timed(store, batches(50, args.reads, "v"), lambda s, r, x: s.append_reads(r, x))
        n = args.readers * args.reads
        base = timed(store, batches(args.readers, args.reads, "b"), unchecked_append)
        checked = timed(store, batches(args.readers, args.reads, "c"), lambda s, r, x: s.append_reads(r, x))
    print(f"readers {args.readers}, reads per reader {args.reads}, embedded SQLite")
    print(f"baseline (no version check): {n / base:,.0f} reads/s")
    print(f"checked (delete and pause versions): {n / checked:,.0f} reads/s")
    print(f"ratio checked/baseline: {base / checked:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
