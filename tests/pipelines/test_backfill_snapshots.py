"""``newsroom backfill --snapshots``: the pages a streaming run would have published, byte-identical every run."""

from __future__ import annotations

import json
import os

from stores import StoreConfig, open_stores

T0 = "2024-03-01T12:{:02d}:{:02d}Z"
STORIES = {  # six German stories (the top page needs five), three publishers each
    "flut": "Hochwasser an der Elbe: Dresden evakuiert die Altstadt",
    "streik": "Bahnstreik legt den Fernverkehr in ganz Deutschland lahm",
    "wahl": "Landtagswahl in Bayern: CSU verliert deutlich an Stimmen",
    "tor": "Bayern München gewinnt das Spitzenspiel gegen Dortmund",
    "zins": "Europäische Zentralbank senkt den Leitzins um einen Viertelpunkt",
    "mond": "Raumsonde landet erstmals auf der Rückseite des Mondes",
}
PUBLISHERS = ["berliner-blatt", "rheinische-post", "hamburger-abendblatt", "stuttgarter-bote"]


def write_input(path):
    with open(path, "w", encoding="utf-8") as f:
        n = 0
        for k, (key, title) in enumerate(STORIES.items()):
            for j in range(3):
                n += 1
                f.write(
                    json.dumps(
                        {
                            "id": f"{key}-{j}",
                            "story_id": key,
                            "language": "de",
                            "title": f"{title} ({PUBLISHERS[(k + j) % 4]})",
                            "text": f"{title}. " * 6 + f"Bericht {j} von {PUBLISHERS[(k + j) % 4]}.",
                            "published_at": T0.format(k * 4 + j, 10 * j),  # 12:00 .. 12:22
                            "publisher": PUBLISHERS[(k + j) % 4],
                            "url": f"https://{PUBLISHERS[(k + j) % 4]}.example/{key}/{j}",
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
    return n


def tree(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = open(path, "rb").read()
    return out


def test_backfill_snapshots_twice_gives_byte_identical_pages(tmp_path):
    from pipelines.backfill import run

    src = tmp_path / "in.jsonl"
    write_input(src)
    for k in (1, 2):
        argv = [
            f"--input={src}",
            f"--output={tmp_path / f'out{k}'}",
            "--embedder=hash",
            f"--snapshots={tmp_path / f'snap{k}'}",
        ]
        assert run(argv) == 0
    a, b = tree(tmp_path / "snap1" / "snapshots"), tree(tmp_path / "snap2" / "snapshots")
    pages = [p for p in a if p.startswith("pages/de-de/top/")]
    assert pages and any(p.startswith("pools/de-de/") for p in a) and any(p.startswith("stories/") for p in a)
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    s1, s2 = (open_stores(StoreConfig(data_dir=str(tmp_path / f"snap{k}"))) for k in (1, 2))
    names = s1.pointers.names()
    assert names == s2.pointers.names() and "de-de/top" in names and "at-de/top" in names
    assert {n: s1.pointers.get(n) for n in names} == {n: s2.pointers.get(n) for n in names}
    versions = [h["version"] for h in s1.pointers.history("de-de/top")]
    sizes = [len(json.loads(s1.snapshots.get(f"pages/de-de/top/v{v}.json"))["stories"]) for v in versions]
    assert max(sizes) == len(STORIES)  # every story of the input was on the page while it was fresh
    # 48 h later the writer's EXPIRE changes age the stories out: the page follows its pool down (a small edition's
    # top page needs half its pool, transforms/editions/ranker/rank.page_minimum), never empty, never losing more than half
    # of the version before it
    assert min(sizes) >= 1 and sizes[-1] < max(sizes)
    assert all(2 * (before - after) <= before for before, after in zip(sizes, sizes[1:]))
    live = json.loads(s1.snapshots.get(f"pages/de-de/top/v{versions[-1]}.json"))
    assert live["generated_at"] == live["cycle"]  # no wall clock in a page


def test_backfill_snapshots_flag_without_dir_publishes_into_the_run_namespace(tmp_path):
    from pipelines.backfill import run

    src = tmp_path / "in.jsonl"
    write_input(src)
    assert (
        run([f"--input={src}", f"--output={tmp_path / 'out'}", "--embedder=hash", "--snapshots", "--namespace=bf-test"])
        == 0
    )
    stores = open_stores(StoreConfig(data_dir=str(tmp_path / "out" / "store"), namespace="bf-test"))
    assert "de-de/top" in stores.pointers.names()
    assert stores.snapshots.exists(f"pages/de-de/top/v{stores.pointers.get('de-de/top')}.json")


def test_replay_in_one_firing_publishes_the_same_snapshots_as_one_timer_round_per_minute(tmp_path, monkeypatch):
    """The backfill's replay runs each edition's minute chain in one timer firing (transforms/editions/beam/ranking.py
    RankEditions, ``replay``); the snapshots (objects and pointer histories) must be byte-identical to the every-minute timers'."""
    import functools

    from pipelines import backfill
    from pipelines.backfill import run

    src = tmp_path / "in.jsonl"
    n = write_input(src)
    with open(src, "a", encoding="utf-8") as f:  # the same stories followed up three days later: a long quiet gap
        for k, (key, title) in enumerate(list(STORIES.items())[:5]):
            pub = PUBLISHERS[(k + 3) % 4]
            f.write(
                json.dumps(
                    {
                        "id": f"{key}-later",
                        "story_id": key,
                        "language": "de",
                        "title": f"{title}: die Folgen ({pub})",
                        "text": f"{title}. Die Folgen. " * 6,
                        "published_at": f"2024-03-04T09:{10 + k:02d}:00Z",
                        "publisher": pub,
                        "url": f"https://{pub}.example/{key}/later",
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    assert n == 18
    original = backfill.add_snapshots
    roots = {}
    for replay in (True, False):
        monkeypatch.setattr(backfill, "add_snapshots", functools.partial(original, replay=replay))
        root = tmp_path / f"snap-{replay}"
        argv = [f"--input={src}", f"--output={tmp_path / f'out-{replay}'}", "--embedder=hash", f"--snapshots={root}"]
        assert run(argv) == 0
        roots[replay] = root
    a, b = tree(roots[True] / "snapshots"), tree(roots[False] / "snapshots")
    assert len([p for p in a if p.startswith("pages/de-de/top/")]) >= 2
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    s1, s2 = (open_stores(StoreConfig(data_dir=str(roots[r]))) for r in (True, False))
    names = s1.pointers.names()
    assert names == s2.pointers.names()
    assert {n: [h["version"] for h in s1.pointers.history(n)] for n in names} == {
        n: [h["version"] for h in s2.pointers.history(n)] for n in names
    }


def test_replay_feeds_the_storylines_to_the_ranker_one_story_per_storyline_in_the_top_five(tmp_path, monkeypatch):
    """The streaming job's ranker reads the storyline stage's changes (one story per storyline in the top 5); the
    backfill's replay must read the run's own (storyline_changes.jsonl), or its pages differ from streaming's."""
    from pipelines.backfill import run
    from transforms.stories.storylines import storyline as slm

    # the hash embedder's vectors are far apart: the rule's cosine and score bars are lowered so that two stories
    # sharing two rare names (Kretschmer, Pirna) link; the shared-names bar stays
    monkeypatch.setattr(slm, "MIN_COS", 0.0)
    monkeypatch.setattr(slm, "THRESHOLD", 0.1)
    extra = {
        "flut": " Ministerpräsident Kretschmer besucht Pirna.",
        "streik": " Ministerpräsident Kretschmer besucht Pirna.",
    }
    src = tmp_path / "in.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for k, (key, title) in enumerate(STORIES.items()):
            for j in range(3 + (key in extra)):
                pub = PUBLISHERS[(k + j) % 4]
                row = {
                    "id": f"{key}-{j}",
                    "story_id": key,
                    "language": "de",
                    "title": f"{title} ({pub})",
                    "text": f"{title}. " * 6 + f"Bericht {j} von {pub}." + extra.get(key, ""),
                    "published_at": T0.format(k * 4 + j, 0),
                    "publisher": pub,
                    "url": f"https://{pub}.example/{key}/{j}",
                }
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    out, root = tmp_path / "out", tmp_path / "snap"
    assert run([f"--input={src}", f"--output={out}", "--embedder=hash", f"--snapshots={root}"]) == 0
    story_of = {r["article_id"]: r["story_id"] for r in map(json.loads, open(out / "assignments.jsonl"))}
    lines = [r["stories"] for r in map(json.loads, open(out / "storylines.jsonl"))]
    pair = sorted({story_of["flut-0"], story_of["streik-0"]})
    assert len(pair) == 2 and pair in lines  # two stories, one storyline
    stores = open_stores(StoreConfig(data_dir=str(root)))
    crowded = []  # the first five of every version holding both stories and more than five in all
    for h in stores.pointers.history("de-de/top"):
        page = json.loads(stores.snapshots.get(f"pages/de-de/top/v{h['version']}.json"))
        ids = [int(s["story_id"]) for s in page["stories"]]
        if len(ids) > 5 and set(pair) <= set(ids):
            crowded.append(ids[:5])
    assert crowded
    assert [t for t in crowded if set(pair) <= set(t)] == []  # never both in the first five
