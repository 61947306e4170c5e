"""Canonical URLs from markup alone (no manifest): how often the chosen URL is the truth, and why it is not.

Reads: ../shared/data/pages/extraction-benchmark (ground-truth.json ``url``, the address each page was fetched
from) and ../shared/data/pages/newspaper4k-fixtures/head (metadata ``url``). Writes: nothing but stdout.

Each page is read as the normaliser reads it (transforms/articles/page.py, structured.py) and its canonical URL
chosen by ``Normalizer._canonical`` with no fetched URL (``newsroom extract`` without ``--manifest``); the score is
``urls.same_url`` (scheme, a leading ``www.`` and a trailing slash ignored), as ``newsroom extract --score``. Each
miss is put in one class, so that the figure says what a rule could still win:

- ``named_not_chosen``: the page names the true URL (rel=canonical, og:url, JSON-LD url/mainEntityOfPage,
  twitter:url or a share widget's self-reference, cleaned as the normaliser cleans them) but another candidate was chosen: the only class
  a change of the choice could fix.
- ``names_other``: every URL the page names differs from the truth (a site moved or renamed, a portal's copy, a
  truth carrying the listing's or a tracker's parameters, a mobile path): markup alone cannot give the truth.
- ``names_none``: the page names no URL of itself at all.

Run: ``.venv/bin/python benchmarks/canonical_bench.py [--misses]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "pages"


def cases(data: Path):
    """(set name, page id, html bytes, true url)."""
    bench = data / "extraction-benchmark"
    if (bench / "ground-truth.json").exists():
        for pid, truth in sorted(json.loads((bench / "ground-truth.json").read_text()).items()):
            path = bench / "html" / f"{pid}.html.gz"
            if path.exists() and truth.get("url"):
                yield "extraction-benchmark", pid, gzip.decompress(path.read_bytes()), truth["url"]
    head = data / "newspaper4k-fixtures" / "head"
    for meta_path in sorted(head.glob("metadata/*.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        html = head / "html" / f"{meta_path.stem}.html"
        if html.exists() and meta.get("url"):
            yield "newspaper4k-head", meta_path.stem, html.read_bytes(), meta["url"]


def judge(normalizer, body: bytes, truth: str) -> tuple[str, str | None, str]:
    """(class, chosen url, canonical_source) of one page."""
    from transforms.articles import page, structured, urls

    _, tree = page.load(body, None)
    pm = structured.read(tree)
    art_ld = pm.article or {}
    chosen, source = normalizer._canonical(None, pm, art_ld)
    if urls.same_url(chosen, truth):
        return "hit", chosen, source
    ld = [art_ld.get("url"), art_ld.get("mainEntityOfPage")]
    ld = [v.get("@id") if isinstance(v, dict) else v for v in ld]
    named = [pm.links.get("canonical"), pm.meta.get("og:url"), *ld, pm.meta.get("twitter:url"), *pm.self_refs]
    named = [urls.clean(u) for u in named if isinstance(u, str) and u.strip()]
    named = [u for u in named if u]
    if any(urls.same_url(u, truth) for u in named):
        return "named_not_chosen", chosen, source
    return ("names_other" if named else "names_none"), chosen, source


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA), help="the pages folder of the labelled data")
    ap.add_argument("--misses", action="store_true", help="print every miss with its class")
    a = ap.parse_args(argv)
    from transforms.articles.normalize import Normalizer

    normalizer = Normalizer(clock=lambda: 1_767_225_600_000)
    by_set: dict[str, Counter] = {}
    for name, pid, body, truth in cases(Path(a.data)):
        cls, chosen, source = judge(normalizer, body, truth)
        by_set.setdefault(name, Counter())[cls] += 1
        if a.misses and cls != "hit":
            print(f"{name} {pid[:16]} {cls} ({source})\n    chose {chosen}\n    truth {truth}")
    if not by_set:
        print(f"no labelled pages under {a.data}")
        return 1
    total = sum(by_set.values(), Counter())
    for name, c in [*by_set.items(), ("all", total)]:
        n = sum(c.values())
        print(
            f"{name:<22} pages {n:>4}   canonical == truth {100 * c['hit'] / n:5.1f} %   misses: named but not "
            f"chosen {c['named_not_chosen']}, page names another URL {c['names_other']}, names none "
            f"{c['names_none']}   ceiling from markup {100 * (c['hit'] + c['named_not_chosen']) / n:5.1f} %"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
