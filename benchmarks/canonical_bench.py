"""Canonical URLs from markup alone (no manifest): how often the chosen URL is the truth, and why it is not.

Reads: ../shared/data/pages/extraction-benchmark (ground-truth.json ``url``), newspaper4k-fixtures/head (metadata
``url``) and newspaper4k-fixtures/old160 (fulltext_url_list.txt, each URL's page named as newspaper's own test
names it: base domain + running number, ``al.com2.html``). Every truth is the address the page was fetched from,
not a canonical URL: it can carry the share link's ``utm_`` parameters, a ``#comments`` fragment, the listing's
state or an edition's host. Writes: nothing but stdout.

Each page is read as the normaliser reads it (transforms/articles/page.py, structured.py) and its canonical URL
chosen by ``Normalizer._canonical`` with no fetched URL (``newsroom extract`` without ``--manifest``); a hit is
``urls.same_url`` (scheme, a leading ``www.`` and a trailing slash ignored) with the truth as given or with the
truth cleaned as every canonical is cleaned (tracking parameters and fragment removed: ``urls.clean``); on the
first two sets the cleaning changes no result. The ``fetched`` column is the same choice with the truth given as
the fetched URL (production, and ``newsroom extract --manifest``). Each miss is put in one class:

- ``named_not_chosen``: the page names the true URL (rel=canonical, og:url, JSON-LD url/mainEntityOfPage,
  twitter:url or a share widget's self-reference, cleaned as the normaliser cleans them) but another candidate was
  chosen: the only class a change of the choice could fix.
- ``names_other``: every URL the page names differs from the truth.
- ``names_none``: the page names no URL of itself at all.

and given a reason (``why``), computed from the chosen URL, the truth and the page: ``case`` (letter case only),
``query`` (the truth carries parameters the page never names, or lacks some it names), ``host`` (another host of
the same site), ``domain`` (another domain: an alias or an old name), ``path`` (same host, another path: a renamed
slug, a moved article, a mobile path), ``other``; plus where the truth still appears in the markup, if anywhere
(``elsewhere in the page``: an hreflang alternate, a widget, a script; or ``only percent-encoded`` inside
analytics URLs). None of these places is a claim of the page about its canonical URL: they name the address it
was served from.

The misses on the 111 pages of the first two sets (88.3 %; the page's own claims are the rule's ceiling, and
none of them names the truth in a claim) and why a general rule cannot take them:

- entermedia.co.kr x2: the truth is the desktop view with the listing's parameters (``&page=1&bc=03&mc=08&find=
  &sch_date=``, the state of the list the crawler came from); the page names only its mobile URL (a Like button's
  ``/m/news_view.html?idx=N``). Neither the path nor the parameters can be had without a rule for that one site.
- wday.ru, reuters.com: the article was renamed after the fetch (wday.ru's new section path, Reuters' new headline
  slug for the same story id); the page names only the new URL, the truth is the old one.
- msn.com x2: a portal copy; rel=canonical names the original publisher (refused: cross-host) and og:url the
  portal's copy, which is the truth but for ``Health`` vs ``health`` (paths are case-sensitive: the page's
  spelling is kept) and for the feed's ``?srcref=rss`` (a referral marker: it appears only percent-encoded in the
  page's analytics beacons, and a canonical must not depend on the feed a reader came through).
- jaraguadosul: fetched from the city's old domain (``.com.br``); the page names only ``.sc.gov.br``.
- cnn.com: fetched from ``edition.cnn.com``; rel=canonical and og:url both say ``www.cnn.com`` (the truth is the
  hreflang x-default and a widget's ``data-src``). Taking the served edition over the page's two claims would
  break the design's precedence and split one article into one id per edition.
- yna.co.kr: the truth carries the listing's ``?section=nk/nk``, which no claim of the page names.
- ascom.com x2, thespacereview.com, news.cn: the page names no URL of itself (ascom's only hint is an Adobe
  Experience Manager content path, ``/content/ascom/ws/global/en-us/...``, whose public form is that site's
  configuration; news.cn names only its publish id).

The misses on old160 (pages of 2013-2014; 92.4 %), of the same kinds: ``?slide=1`` (teenvogue x2: the gallery's
first slide, the address fetched; the canonical drops it), ``?c=tpstream`` (upworthy: the stream the reader came
from, seen only in comScore's script), an old or alias domain (theatlanticcities.com, now citylab.com, x2; tnr.com
for newrepublic.com x2), a truth with a stray quote (dallasnews: a typo in newspaper's URL list), a saved 404 page
(details.com: rel=canonical and og:url say ``/404``) and two pages naming no URL (fool.com, readwrite.com).

So 97 % is out of reach from markup alone on these sets: every miss is a page whose claims name another URL or
none, and the truth is where the crawler came from. With the fetched URL given (the ``fetched`` figure) the
pages that name nothing get it, and what is left are the claims the design trusts over the served address.

Run: ``.venv/bin/python benchmarks/canonical_bench.py [--misses]``
"""

from __future__ import annotations

import argparse
import gzip
import html as html_mod
import json
import re
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

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
    yield from _old160(data / "newspaper4k-fixtures" / "old160")


def _old160(root: Path):
    """newspaper's fulltext test: the n-th URL of a base domain (the last two labels, three for co.uk, com.au and
    au.com) is the page ``<base><n>.html``."""
    listing = root / "fulltext_url_list.txt"
    if not listing.exists():
        return
    seen: Counter = Counter()
    for url in listing.read_text(encoding="utf-8").split():
        labels = (urlsplit(url).hostname or "").split(".")
        base = ".".join(labels[-3:] if ".".join(labels[-2:]) in ("co.uk", "com.au", "au.com") else labels[-2:])
        seen[base] += 1
        path = root / "html" / f"{base}{seen[base]}.html"
        if path.exists():
            yield "newspaper4k-old160", f"{base}{seen[base]}", path.read_bytes(), url


def matches(url: str | None, truth: str) -> bool:
    """The truth as given, or cleaned as every canonical is (its share link's trackers and fragment dropped)."""
    from transforms.articles import urls

    return urls.same_url(url, truth) or urls.same_url(url, urls.clean(truth))


def judge(normalizer, body: bytes, truth: str) -> tuple[str, str | None, str]:
    """(class, chosen url, canonical_source) of one page."""
    from transforms.articles import page, structured, urls

    _, tree = page.load(body, None)
    pm = structured.read(tree)
    art_ld = pm.article or {}
    chosen, source = normalizer._canonical(None, pm, art_ld)
    if matches(chosen, truth):
        return "hit", chosen, source
    ld = [art_ld.get("url"), art_ld.get("mainEntityOfPage")]
    ld = [v.get("@id") if isinstance(v, dict) else v for v in ld]
    named = [pm.links.get("canonical"), pm.meta.get("og:url"), *ld, pm.meta.get("twitter:url"), *pm.self_refs]
    named = [urls.clean(u) for u in named if isinstance(u, str) and u.strip()]
    named = [u for u in named if u]
    if any(matches(u, truth) for u in named):
        return "named_not_chosen", chosen, source
    return ("names_other" if named else "names_none"), chosen, source


def with_fetched_url(normalizer, body: bytes, truth: str) -> bool:
    """The same choice when the fetcher's final URL (here the truth) is known, as in production."""
    from transforms.articles import page, structured

    _, tree = page.load(body, None)
    pm = structured.read(tree)
    return matches(normalizer._canonical(truth, pm, pm.article or {})[0], truth)


def why(chosen: str | None, truth: str, body: bytes) -> str:
    """Why a miss is one: how the truth differs from the chosen URL, and where it still appears in the page."""
    from transforms.articles import urls

    t = urlsplit(urls.clean(truth) or truth)
    reason = "no URL"
    if chosen:
        c = urlsplit(chosen)
        th, ch = (t.hostname or "").removeprefix("www."), (c.hostname or "").removeprefix("www.")
        tq, cq = dict(parse_qsl(t.query, keep_blank_values=True)), dict(parse_qsl(c.query, keep_blank_values=True))
        if chosen.lower().rstrip("/") == t.geturl().lower().rstrip("/") or (th, t.path.lower()) == (ch, c.path.lower()):
            reason = "case" if tq == cq else "query"
        elif th == ch and t.path.rstrip("/") == c.path.rstrip("/"):
            reason = "query"
        elif th != ch and t.path.rstrip("/") == c.path.rstrip("/"):
            reason = "host" if urls.registrable(th) == urls.registrable(ch) else "domain"
        else:
            reason = "path" if th == ch else "other"
        if reason == "query":
            extra = sorted(set(tq) - set(cq)) or sorted(set(cq) - set(tq))
            reason += f" ({', '.join(extra) or 'values'})"
    return reason + _where(truth, body)


def _where(truth: str, body: bytes) -> str:
    """``; elsewhere in the page`` when the truth appears as such outside the page's claims (an hreflang alternate,
    a widget's attribute, an analytics script), ``; only percent-encoded`` when only inside other URLs (beacons)."""
    key = re.sub(r"^[a-z]+://(www\.)?", "", truth, flags=re.I).rstrip("/")
    text = html_mod.unescape(body.decode("utf-8", "replace"))
    if key in text:
        return "; elsewhere in the page"
    for _ in range(3):
        text = unquote(text)
        if key in text:
            return "; only percent-encoded"
    return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA), help="the pages folder of the labelled data")
    ap.add_argument("--misses", action="store_true", help="print every miss with its class and reason")
    a = ap.parse_args(argv)
    from transforms.articles.normalize import Normalizer

    normalizer = Normalizer(clock=lambda: 1_767_225_600_000)
    by_set: dict[str, Counter] = {}
    for name, pid, body, truth in cases(Path(a.data)):
        cls, chosen, source = judge(normalizer, body, truth)
        c = by_set.setdefault(name, Counter())
        c[cls] += 1
        c["fetched"] += with_fetched_url(normalizer, body, truth)
        if a.misses and cls != "hit":
            print(f"{name} {pid[:16]} {cls} ({source}) why: {why(chosen, truth, body)}")
            print(f"    chose {chosen}\n    truth {truth}")
    if not by_set:
        print(f"no labelled pages under {a.data}")
        return 1
    total = sum(by_set.values(), Counter())
    for name, c in [*by_set.items(), ("all", total)]:
        n = sum(v for k, v in c.items() if k != "fetched")
        print(
            f"{name:<22} pages {n:>4}   canonical == truth {100 * c['hit'] / n:5.1f} %   misses: named but not "
            f"chosen {c['named_not_chosen']}, page names another URL {c['names_other']}, names none "
            f"{c['names_none']}   ceiling from markup {100 * (c['hit'] + c['named_not_chosen']) / n:5.1f} %   "
            f"fetched URL given {100 * c['fetched'] / n:5.1f} %"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
