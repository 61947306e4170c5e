"""Entity extraction benchmark: articles/s of ``transforms.articles.entities.extract`` (with the gazetteer's place
resolution) against a baseline extractor, in one run, on the same articles.

Reads: the dev files of ../shared/data/stories (title + text, every language there) when present, else synthetic
articles built here. The baseline is ``transforms/articles/entities.py`` as it was at ``--baseline`` (a git
revision, default the commit before places: 55daf5d), loaded from ``git show`` into a module of its own. Writes
nothing but stdout.

Run: ``.venv/bin/python benchmarks/entities_bench.py [--articles 2000] [--rounds 3] [--baseline 55daf5d]
[--data ../shared/data/stories]``

Prints per extractor the CPU seconds per 1,000 articles (process time, so other load on the machine inflates it
much less than wall clock), articles per CPU second, the ratio new / baseline, the story writer's place reading
(title + 600 body characters: the extractor + places_of against quick_places, what places_of does without
entities), and the gazetteer's one-off build time and memory (paid once per process, not per article).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def load_articles(n: int, folder: Path) -> list[tuple[str, str, str]]:
    files = []
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        files.append(
            [(r.get("title") or "", r.get("text") or r.get("body") or "", r.get("language") or "en") for r in rows]
        )
    out = [f[i] for i in range(max(map(len, files), default=0)) for f in files if i < len(f)]  # files interleaved
    if not out:
        body = (
            "Two teens were wounded in Stockton, California, on Friday night, police said. Officer Jane Roe of "
            "the Stockton Police Department told reporters the gunman fled. Mayor Kevin Lincoln said the city "
        )
        out = [(f"2 teens wounded in Stockton ({i})", body * 4, "en") for i in range(100)]
    return [out[i % len(out)] for i in range(n)]


def baseline_extract(revision: str):
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{revision}:transforms/articles/entities.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False, encoding="utf-8") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("entities_baseline", f.name)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["entities_baseline"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod.extract


def cpu_per_1000(extractors: list, articles, rounds: int) -> list[float]:
    """CPU s per 1,000 articles of each extractor, the best of ``rounds``, the extractors interleaved round by round
    (load on a shared machine drifts: one after the other, the second would run under other load)."""
    best = [float("inf")] * len(extractors)
    for _ in range(rounds):
        for k, extract in enumerate(extractors):
            t = time.process_time()
            for title, body, language in articles:
                extract(title, body, language)
            best[k] = min(best[k], time.process_time() - t)
    return [b * 1000 / len(articles) for b in best]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--articles", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", default="55daf5d")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "stories")
    args = ap.parse_args(argv)

    from transforms.articles import entities, places

    t = time.process_time()
    places.gazetteer()
    build_s = time.process_time() - t
    places.gazetteer.cache_clear()
    tracemalloc.start()
    places.gazetteer()
    held_mb = tracemalloc.get_traced_memory()[0] / 1e6
    tracemalloc.stop()
    articles = load_articles(args.articles, args.data)
    old = baseline_extract(args.baseline)
    old(*articles[0]), entities.extract(*articles[0])  # warm both (alias tables, caches)
    base, new = cpu_per_1000([old, entities.extract], articles, args.rounds)
    print(f"articles: {len(articles)} ({len({a[2] for a in articles})} languages), best of {args.rounds} rounds")
    print(f"baseline {args.baseline}: {base:.3f} CPU s / 1,000 articles = {1000 / base:.0f} articles per CPU second")
    print(f"now (with places):   {new:.3f} CPU s / 1,000 articles = {1000 / new:.0f} articles per CPU second")
    print(f"speed now / baseline: {base / new:.2f}x")
    head = [(t, b[:600], lang) for t, b, lang in articles]  # what the story writer reads for places
    full, quick = cpu_per_1000(
        [lambda t, b, lang: places.places_of(t, b, lang, entities.extract(t, b, lang)), places.quick_places],
        head,
        args.rounds,
    )
    print(
        f"writer's places (title + 600 chars): extract + places_of {full:.3f}, quick_places {quick:.3f} CPU s / 1,000"
    )
    print(f"gazetteer build (once per process): {build_s:.2f} CPU s, {held_mb:.0f} MB held")


if __name__ == "__main__":
    main()
