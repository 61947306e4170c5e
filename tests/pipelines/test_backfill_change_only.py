"""``newsroom backfill --snapshots`` ranks in full only at the minutes where a page can change (the change-only
replay, transforms/editions/ranker/steady.py); its snapshots must be byte-identical to the every-minute replay's
(``--snapshots_every_minute``, the baseline kept for this comparison and benchmarks/snapshots_bench.py)."""

from __future__ import annotations

import json
import logging
import re

from stores import StoreConfig, open_stores
from tests.pipelines.test_backfill_snapshots import PUBLISHERS, STORIES, tree, write_input


def _follow_ups(path) -> None:
    """The same stories followed up three days later (a long quiet gap), one of them twice in an hour."""
    with open(path, "a", encoding="utf-8") as f:
        for k, (key, title) in enumerate(list(STORIES.items())[:5]):
            for j, minute in enumerate((10 + k, 40 + k) if k == 0 else (10 + k,)):
                pub = PUBLISHERS[(k + 3 + j) % 4]
                row = {
                    "id": f"{key}-later-{j}",
                    "story_id": key,
                    "language": "de",
                    "title": f"{title}: die Folgen ({pub})",
                    "text": f"{title}. Die Folgen. " * 6 + f"Teil {j}.",
                    "published_at": f"2024-03-04T09:{minute:02d}:00Z",
                    "publisher": pub,
                    "url": f"https://{pub}.example/{key}/later/{j}",
                }
                f.write(json.dumps(row, ensure_ascii=False) + "\n")


def test_change_only_replay_publishes_the_every_minute_replays_bytes(tmp_path, caplog):
    from pipelines.backfill import run

    src = tmp_path / "in.jsonl"
    write_input(src)
    _follow_ups(src)
    roots = {}
    with caplog.at_level(logging.INFO, logger="transforms.editions.beam"):
        for mode, extra in (("every", ["--snapshots_every_minute"]), ("change", [])):
            root = tmp_path / f"snap-{mode}"
            argv = [f"--input={src}", f"--output={tmp_path / f'out-{mode}'}", "--embedder=hash", f"--snapshots={root}"]
            assert run(argv + extra) == 0
            roots[mode] = root
    a, b = tree(roots["every"] / "snapshots"), tree(roots["change"] / "snapshots")
    assert len([p for p in a if p.startswith("pages/de-de/top/")]) >= 2
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    s1, s2 = (open_stores(StoreConfig(data_dir=str(roots[m]))) for m in ("every", "change"))
    names = s1.pointers.names()
    assert names == s2.pointers.names()

    def moves(s):  # "at" is the wall clock of the move: everything else must match
        return {n: [(h["version"], h["previous"], h["reason"]) for h in s.pointers.history(n)] for n in names}

    assert moves(s1) == moves(s2)
    # the change-only replay did skip work: most chain minutes were steady (no documents built)
    summaries = [r.getMessage() for r in caplog.records if "minutes ranked" in r.getMessage()]
    steady = [int(m.group(1)) for s in summaries if (m := re.search(r"(\d+) steady", s))]
    assert steady and sum(steady) > 0, summaries
