"""Parse cost per MiB: real feeds, fronts and pages against hostile ones, for every parser ingest and extraction run.

Reads: ../shared/data/feeds/rss-parser/input and ../shared/data/pages (or ``--shared``); without them, generated
feeds and pages stand in. Writes: stdout only. Run:

    PYTHONPATH=. .venv/bin/python benchmarks/parse_cost.py [--pages 60] [--baseline]

Each line is CPU seconds per MiB of input (``time.process_time``, in this process: the parse functions the budgeted
children run) and the ratio to the normal input of the same parser measured in the same command:

- normal: the saved feeds through ``parse_feed`` (feedparser, defusedxml), the saved pages as fronts through
  ``parse_front`` (lxml) and through ``Normalizer.extract`` (lxml, trafilatura, htmldate, extruct; ``--pages`` of
  them), and the attribute scan alone (transforms/markup.py) over all of them;
- hostile: one element with 40,000 attributes (~430 KB) in an RSS item, an Atom entry, a sitemap url, a front page
  and an article page (refused by the scan); the worst the scan lets through (every element with 256 attributes,
  1 MiB); and shapes that are linear but slow for feedparser (50,000 and 100,000 unclosed or sibling elements: at
  ~7 s per MiB a 3 MiB one meets the 15 s parse budget).
- ``--baseline``: the same 40,000-attribute inputs with the scan switched off (what 55daf5d did), at 10,000 /
  20,000 / 40,000 attributes: the quadratic growth the scan removes (takes a few minutes).
"""

from __future__ import annotations

import argparse
import gzip
import os
import time
from pathlib import Path
from unittest import mock

MIB = 1024 * 1024
SHARED = Path(os.environ.get("NEWSROOM_SHARED", "/work/shared")) / "data"
URL = "https://www.example.com/world/2026/01/01/quake-hits-the-coast"
T0 = 1_767_225_600_000
PARA = "<p>The council met on Tuesday and approved the budget for the new park near the river, officials said.</p>"


def attrs(n: int) -> str:
    return " ".join(f'a{i}="{i}"' for i in range(n))


def hostile(n: int) -> dict:
    """Kind -> body with one element of ``n`` attributes."""
    a = attrs(n)
    return {
        "rss": f'<rss version="2.0"><channel><title>t</title><item {a}><link>{URL}</link></item></channel></rss>',
        "atom": f'<feed xmlns="http://www.w3.org/2005/Atom"><entry {a}><id>x</id><link href="{URL}"/></entry></feed>',
        "sitemap": f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url {a}><loc>{URL}</loc></url></urlset>',
        "front": f'<html><body><div {a}><a href="{URL}">Quake</a></div></body></html>',
        "page": f"<html><head><title>Quake</title></head><body><article {a}><h1>Quake</h1>{PARA * 8}</article></body></html>",
    }


def load(shared: Path) -> tuple[list[bytes], list[bytes]]:
    feeds = [p.read_bytes() for p in sorted((shared / "feeds/rss-parser/input").glob("*")) if p.is_file()]
    pages = []
    for p in sorted((shared / "pages").rglob("*")):
        if p.name.endswith((".html", ".html.gz")):
            raw = p.read_bytes()
            pages.append(gzip.decompress(raw) if p.name.endswith(".gz") else raw)
    if not feeds:  # generated stand-ins: a 200-item RSS feed, pages of 40 paragraphs and 300 links
        items = "".join(f"<item><title>Story {i}</title><link>{URL}-{i}</link></item>" for i in range(200))
        feeds = [f'<rss version="2.0"><channel><title>t</title>{items}</channel></rss>'.encode()]
    if not pages:
        links = "".join(f'<li><a href="/world/2026/01/01/story-number-{i}">Story {i}</a></li>' for i in range(300))
        pages = [f"<html><body><ul>{links}</ul><article>{PARA * 40}</article></body></html>".encode()] * 20
    return feeds, pages


def per_mib(fn, bodies: list[bytes]) -> float:
    """CPU seconds per MiB of ``fn`` over ``bodies`` (refusals count: they are the work done)."""
    t = time.process_time()
    for body in bodies:
        try:
            fn(body)
        except Exception:  # noqa: BLE001 - a refusal or a parse error is still the cost measured
            pass
    return (time.process_time() - t) / (sum(map(len, bodies)) / MIB)


def parsers():
    from transforms import markup
    from transforms.articles.normalize import Normalizer
    from transforms.ingest.feeds import parse_feed
    from transforms.ingest.fronts import parse_front

    norm = Normalizer()
    return {
        "feed": lambda b: parse_feed(b, "https://www.example.com/feed", T0),
        "front": lambda b: parse_front(b, "https://www.example.com/"),
        "page": lambda b: norm.extract(b, url=URL, headers={}, now_ms=T0),
        "scan": lambda b: markup.crowded_element(b, xml=b.lstrip()[:5] in (b"<?xml", b"<rss ", b"<feed")),
    }


def row(name: str, value: float, base: float | None = None) -> None:
    ratio = f"{value / base:8.1f}x normal" if base else ""
    print(f"  {name:<52} {value:9.3f} s/MiB {ratio}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--shared", default=str(SHARED), help=f"The shared data folder. Default: {SHARED}")
    ap.add_argument("--pages", type=int, default=60, help="Pages extracted for the page figure. Default: 60.")
    ap.add_argument("--baseline", action="store_true", help="Also time the hostile inputs without the scan.")
    args = ap.parse_args()
    feeds, pages = load(Path(args.shared))
    p = parsers()
    p["page"](pages[0])  # lazy imports and models, not charged to any figure
    print(f"normal: {len(feeds)} feeds ({sum(map(len, feeds)) / MIB:.1f} MiB), {len(pages)} pages")
    normal = {
        "feed": per_mib(p["feed"], feeds),
        "front": per_mib(p["front"], pages),
        "page": per_mib(p["page"], pages[: args.pages]),
    }
    for kind, value in normal.items():
        row(f"{kind} parse", value)
    row("attribute scan (feeds and pages)", per_mib(p["scan"], feeds + pages))
    print("hostile: one element with 40,000 attributes (refused by the scan)")
    for kind, body in hostile(40_000).items():
        parser = {"rss": "feed", "atom": "feed", "sitemap": "feed"}.get(kind, kind)
        row(f"{kind} ({len(body) // 1024} KB)", per_mib(p[parser], [body.encode()]), normal[parser])
    print("hostile but let through: the most the scan allows, and linear shapes")
    element = f"<p {attrs(256)}>x</p>"
    many = {
        "feed": f'<rss version="2.0"><channel><title>t</title><item><link>{URL}</link>{{}}</item></channel></rss>',
        "front": f'<html><body><a href="{URL}">a</a>{{}}</body></html>',
        "page": f"<html><body><article><h1>Quake</h1>{PARA * 8}{{}}</article></body></html>",
    }
    for parser, shell in many.items():
        body = shell.format(element * (MIB // len(element))).encode()
        row(f"{parser}: 1 MiB of 256-attribute elements", per_mib(p[parser], [body]), normal[parser])
    for label, unit in (("unclosed <b>", "<b>"), ("sibling <x a='1'/>", "<x a='1'/>")):
        for n in (50_000, 100_000):  # the same figure at both sizes: linear (the budget stops a big one)
            body = many["feed"].format(unit * n).encode()
            row(f"feed: {n:,} {label}", per_mib(p["feed"], [body]), normal["feed"])
    if args.baseline:
        from transforms import markup

        print("baseline (the scan off, as on 55daf5d): CPU seconds for one element of n attributes")
        with mock.patch.object(markup, "hostile_detail", lambda *a, **k: None):
            for n in (10_000, 20_000, 40_000):
                for kind, body in hostile(n).items():
                    parser = {"rss": "feed", "atom": "feed", "sitemap": "feed"}.get(kind, kind)
                    t = time.process_time()
                    per_mib(p[parser], [body.encode()])
                    print(f"  n={n:<6} {kind:<8} {time.process_time() - t:7.2f} s", flush=True)


if __name__ == "__main__":
    main()
