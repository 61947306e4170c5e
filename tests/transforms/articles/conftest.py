"""Small article pages and RawItems built in the tests themselves (no shared data), and an embedded store.

- ``make_html(...)``: a realistic news page (head metadata, nav, article, related links, footer).
- ``make_raw(url, html, ...)``: a valid RawItem dict for that page.
- Texts: ``WIRE_REPORT`` (a wire story), ``LOCAL_EXTRA`` (~20 % more words of local reporting), and
  ``INDEPENDENT_A`` / ``INDEPENDENT_B`` (two outlets' own reports of the same event: same facts, own words).
"""

from __future__ import annotations

import json

import pytest

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HOUR = 3600 * 1000

WIRE_REPORT = [
    "A magnitude 6.1 earthquake struck off the northern coast of Valparaiso Province early on Tuesday, shaking "
    "buildings in the capital and cutting power to more than 40,000 homes, the national seismological service said.",
    "The quake hit at 4:12 a.m. local time at a depth of 35 kilometres, about 60 kilometres northwest of the port "
    "city, according to the service, which recorded at least a dozen aftershocks in the following two hours.",
    "Civil protection officials said there were no immediate reports of deaths, but four people were treated for "
    "minor injuries after falling debris damaged a market hall and two older houses in the historic centre.",
    "The navy ruled out a tsunami threat within twenty minutes, although it asked fishing crews to stay in port "
    "until engineers had inspected the breakwater and the loading cranes of the container terminal.",
    "Schools in three districts will remain closed on Wednesday while inspectors check their structures, the "
    "education ministry said, adding that classes elsewhere would go ahead as planned.",
    "The region sits on the boundary between two tectonic plates and is among the most seismically active areas "
    "in the world; a much stronger earthquake in 2010 killed more than 500 people along the coast.",
    "Residents described being woken by a long rolling motion followed by a sharp jolt. Many spent the rest of the "
    "night outdoors, wrapped in blankets, as emergency crews checked gas lines and cleared fallen cables.",
    "Power company engineers had restored electricity to most neighbourhoods by midday, and the main highway "
    "linking the port to the capital reopened after a brief closure for a bridge inspection.",
]
LOCAL_EXTRA = [
    "In our town, the volunteer fire brigade said its station on Harbour Street lost a window but crews were out "
    "within minutes to help neighbours check chimneys and water tanks for cracks.",
    "The mayor, Elena Duarte, said the council would open the sports hall overnight for anyone who did not want "
    "to sleep at home, and bakers on the square donated bread.",
]
INDEPENDENT_A = [
    "Hundreds of families in the port city spent a cold night in parks and on beaches after a strong tremor rattled "
    "the coast before dawn on Tuesday, our correspondent reports.",
    "Seismologists measured the shock at 6.1 and placed its centre under the sea, roughly an hour's drive from the "
    "harbour. Dozens of smaller tremors followed while people were still gathering in the streets.",
    "At the central market, stall holders swept up glass and broken crates. Part of the roof had come down over the "
    "fish counters, and firefighters taped off the entrance while an engineer examined the beams.",
    "The naval command lifted its sea warning shortly before five, but trawler captains were told to keep their "
    "boats tied up until the harbour walls had been checked.",
    "Local hospitals reported a handful of people with cuts and bruises. Officials stressed that no one had died, "
    "and that electricity would be back in most districts by lunchtime.",
    "Older residents compared the night to the disaster of 2010, when a far larger quake and tsunami devastated "
    "fishing villages along this stretch of coastline.",
]
INDEPENDENT_B = [
    "The earthquake that woke the coast on Tuesday was a reminder of how exposed the region remains, engineers and "
    "emergency planners said, even though damage this time was limited to a few buildings.",
    "Measured at 6.1, the offshore quake produced a series of aftershocks that kept residents on edge for hours. "
    "Four people needed treatment for light injuries, according to the regional health authority.",
    "Inspectors spent the morning at schools in three districts, which will stay shut on Wednesday. The education "
    "authorities said the closure was a precaution rather than a sign of serious structural problems.",
    "Experts pointed to the rules adopted after 2010, when more than 500 people died, as the reason modern blocks "
    "swayed without collapsing. Historic houses in the old centre fared worse.",
    "The power grid operator said the outage, which at its peak affected more than 40,000 homes, was caused by "
    "protective switches tripping at two substations, and that repairs had been quick.",
    "Port operations resumed in the afternoon once cranes at the container terminal and the breakwater had been "
    "declared safe by the navy's engineers.",
]


def make_html(
    title: str,
    paragraphs: list[str],
    *,
    canonical: str | None = None,
    og_url: str | None = None,
    published: str | None = "2025-12-31T22:30:00Z",
    jsonld: dict | list | None = None,
    amp: bool = False,
    lang: str = "en",
    section: str | None = None,
    site: str = "The Daily Herald",
    head_extra: str = "",
    body_extra: str = "",
    description: str | None = None,
    image: str | None = "https://dailyherald.test/img/lead.jpg",
) -> bytes:
    head = [f"<meta charset='utf-8'><title>{title} | {site}</title>"]
    if canonical:
        head.append(f"<link rel='canonical' href='{canonical}'>")
    if og_url:
        head.append(f"<meta property='og:url' content='{og_url}'>")
    head.append(f"<meta property='og:title' content=\"{title}\"><meta property='og:site_name' content='{site}'>")
    if image:
        head.append(f"<meta property='og:image' content='{image}'>")
    if description:
        head.append(f"<meta name='description' content=\"{description}\">")
    if published:
        head.append(f"<meta property='article:published_time' content='{published}'>")
    if section:
        head.append(f"<meta property='article:section' content='{section}'>")
    if jsonld is not None:
        head.append(f"<script type='application/ld+json'>{json.dumps(jsonld)}</script>")
    head.append(head_extra)
    paras = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    html = f"""<!DOCTYPE html>
<html lang="{lang}"{" amp" if amp else ""}><head>{"".join(head)}</head>
<body>
<header><nav><ul><li><a href="/">Home</a></li><li><a href="/world">World</a></li><li><a href="/sport">Sport</a></li>
<li><a href="/opinion">Opinion</a></li></ul></nav></header>
<main><article>
<h1>{title}</h1>
<div class="byline">By Staff Reporter</div>
<div class="article-body">
{paras}
</div>
{body_extra}
<p>Sign up for our daily newsletter to get the latest updates delivered to your inbox.</p>
</article>
<aside class="related"><h3>Related stories</h3><ul>
<li><a href="/a">Storm season begins early on the coast</a></li>
<li><a href="/b">Council approves new harbour budget</a></li>
</ul></aside></main>
<footer><p>Copyright 2026 {site}. All rights reserved.</p><a href="/privacy">Privacy</a></footer>
</body></html>"""
    return html.encode("utf-8")


def make_raw(
    url: str,
    html: bytes,
    *,
    fetched_at: int = T0,
    first_seen_at: int | None = None,
    status: int = 200,
    headers: dict | None = None,
    entry: dict | None = None,
    final_url: str | None = None,
    source: str = "FEED",
) -> dict:
    import hashlib

    return {
        "schema_version": 1,
        "item_id": hashlib.sha256(url.encode()).hexdigest()[:32],
        "source": source,
        "feed_url": None,
        "publisher_id": None,
        "fetched_url": url,
        "final_url": final_url or url,
        "http_status": status,
        "headers": headers if headers is not None else {"content-type": "text/html; charset=utf-8"},
        "body": html,
        "fetched_at": fetched_at,
        "first_seen_at": first_seen_at if first_seen_at is not None else fetched_at - 60_000,
        "entry": entry,
    }


@pytest.fixture
def article_store(tmp_path):
    from stores import StoreConfig, open_store

    return open_store("articles", StoreConfig(backend="embedded", data_dir=str(tmp_path / "store")))


@pytest.fixture(scope="session")
def normalizer():
    from transforms.articles.normalize import Normalizer

    return Normalizer(clock=lambda: T0 + HOUR)


@pytest.fixture(scope="session")
def kit():
    """The builders and texts above, for test modules (``kit.make_html``, ``kit.WIRE_REPORT``, ``kit.T0`` ...)."""
    import types

    names = ("T0", "HOUR", "WIRE_REPORT", "LOCAL_EXTRA", "INDEPENDENT_A", "INDEPENDENT_B", "make_html", "make_raw")
    return types.SimpleNamespace(**{n: globals()[n] for n in names})
