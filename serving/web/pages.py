"""The reader web front end: server-rendered HTML pages, shared and cached by the CDN like the JSON API.

Reads the in-memory catalog only (the same prepared snapshots :mod:`serving.api.editions` and :mod:`serving.api.stories`
serve as JSON, decoded from their pre-serialised bytes, so HTML and JSON always agree); writes responses.

- ``GET /``: 302 to the default edition page (``us-en`` when loaded, else the first edition).
- ``GET /e/{edition}/``: the edition's top stories (representative article, publisher, time, Full Coverage link);
  ``GET /e/{edition}/{section}``: one section page.
- ``GET /e/{edition}/topics/{topic_id}``: a topic page (an entity, a place or city, a section): the edition's live
  stories about it, the same items in the same order as ``GET /v1/topics/{topic_id}?edition=`` (its bytes,
  decoded), named by the alias table's canonical name; the edition's top page links the topics pre-built this
  cycle (followed and trending).
- ``GET /e/{edition}/topics``: the edition's topics index: every topic page its pool serves (sections, places,
  organisations, people), with live story counts; linked from every edition page's navigation. Each card carries
  up to ``CHIPS_PER_CARD`` topic chips from the same pool, so a chip always leads to a page holding that story.
- Cards: the representative's image with ``alt`` = its headline, ``loading="lazy"``, and ``width``/``height`` only
  when the card states both (``image_width``/``image_height``, schemas/json/edition_page); labels of the story
  (breaking, developing, opinion, fact-check) and of the card (opinion, fact-check, paid, ...). Times are absolute
  ``<time datetime data-relative>`` text; ``/assets/reltime.js`` words them relatively ("5 min ago") in the
  reader's browser, so the shared bytes stay the same for every reader (see ``when``).
- ``GET /stories/{story_id}``: Full Coverage (timeline, publishers, other languages, opinion / fact-check labels);
  merged ids answer 301 to the survivor's page.
- ``GET /e/{edition}/for-you``: a shell page; its script (``/assets/foryou.js``) keeps the reader token in the
  browser's localStorage (a form to paste it, or local sign-in: serving/web/signin.py) and inserts the reader's
  cards, ``GET /v1/feed/for-you/cards`` with ``Authorization: Bearer`` (serving/web/foryou_cards.py: the feed's
  page as this module's cards). The token is never in a page, a URL or a cookie, so the
  shell is shared like every other page. Every page also loads ``/assets/reader.js`` (after ``common.js``, the helpers
  the scripts share): the signed-in reader's controls, read beacon, the top page's For you slice and the "new stories"
  pill, all in the browser after load (the page only carries what is the same for every reader: publisher ids on
  cards, the page version).
- ``GET /assets/{version}/{name}``: the CSS and JS of ``serving/web/static/`` at their content version, immutable for
  a year (``/assets/{name}``: the current bytes with a page TTL).

Every page is shared: the JSON pages' ``Cache-Control`` (story pages the story one), a strong ETag of the bytes
(304 on If-None-Match), a strict ``Content-Security-Policy`` (no inline script or style, ``script-src 'self'``),
never ``Set-Cookie``. Unlike the JSON endpoints, Cookie and Authorization are not rejected (a browser sends
whatever cookies its jar holds for the host); they are ignored: nothing here reads them, so they cannot change a
page. Unknown editions, sections and stories answer an HTML 404 cached briefly (``http.NEGATIVE``). Everything
from articles is escaped by Jinja's autoescape; links and images only keep http(s) URLs.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import orjson
from flask import Response

from serving.api.editions import is_configured
from serving.api.stories import EDITION, STORY_ID, story_entry, unavailable
from serving.api.storylines import linked_storyline
from serving.http import conventions as http
from serving.state.context import services
from serving.web.messages import messages
from serving.web.shell import (
    bp,
    cached,
    etag_of,
    lang_of,
    live_editions,
    not_found,
    not_ready,
    render,
    safe_url,
    section_title,
    sections_of,
    shared,
    warming_up,
    when,
)
from serving.web.signin import follow_target
from stores.base import StoreError

DEFAULT_EDITION = "us-en"
SECTION = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
STORY_MAX_ARTICLES = 200  # Full Coverage in HTML shows this many; the JSON API pages through all of them
TOPIC_KINDS = {"ORG": "Organisation", "PERSON": "Person", "PLACE": "Place"}
STATIC_DIR = Path(__file__).resolve().parent / "static"
ASSET_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}


def _card(card: dict) -> dict:
    out = dict(card)
    out["url"] = safe_url(card.get("url"))
    out["image_url"] = safe_url(card.get("image_url"))
    w, h = card.get("image_width"), card.get("image_height")
    known = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (w, h))
    out["image_width"], out["image_height"] = (w, h) if known else (None, None)  # never a made-up aspect ratio
    out["labels"] = list(card.get("labels") or [])
    out["publisher"] = card.get("publisher_name") or card.get("publisher_id")
    out["when"] = when(card.get("published_at", ""))
    return out


def story_labels(story: dict) -> list[str]:
    """A story's own labels, printed once above its headline: never one its representative's card already shows
    (pages ranked before the labels were split named the representative's opinion on the story too)."""
    own = set(story["representative"].get("labels") or ())
    return [lab for lab in dict.fromkeys(story.get("labels") or ()) if lab not in own and lab != "opinion"]


def edition_view(cat, page) -> list[dict]:
    """The page's stories in served order, as the JSON ``GET /v1/editions/{e}/sections/{s}`` has them."""
    body, _ = page.body(None)
    return story_views(cat, page.edition, orjson.loads(body)["stories"])


def story_views(cat, edition: str, stories: list[dict]) -> list[dict]:
    """Ranked stories as JSON (a page's entries, pool items of For you) made the cards of ``web/_stories.html``:
    links and images made safe, labels once, the counts Full Coverage shows, topic chips of the edition."""
    for s in stories:
        s["representative"] = _card(s["representative"])
        s["supporting"] = [_card(c) for c in s.get("supporting") or []]
        s["labels"] = story_labels(s)
    return with_chips(cat, edition, with_counts(cat, stories))


def with_counts(cat, stories: list[dict]) -> list[dict]:
    """The article and publisher counts of each card, from the one source Full Coverage shows: the story coverage
    version this catalog holds (every story a loaded page or pool references is held, serving/state/watcher.py). A
    page's own counts are the ranker's (live publishers only, at its cycle); a topic page has none. Only a
    story whose coverage is not held keeps the page's figures."""
    for s in stories:
        entry = cat.stories.get(s["story_id"])
        if entry is not None:
            s["article_count"] = len(entry.current.cards)
            s["publisher_count"] = entry.current.publisher_count
    return stories


CHIPS_PER_CARD = 3  # topic chips on one card: its entities and places first, then its section (a phone row)


def pool_topic_ids(pool, i: int) -> list[str]:
    """The topic page ids of candidate ``i`` of the pool (the ids ``/e/{edition}/topics/{id}`` serves from it):
    entities (a place entity as its place), places, then sections; each once."""
    ids = [f"place:{e[6:]}" if e.startswith("place:") else f"entity:{e}" for e in pool.entities[i]]
    ids += [f"place:{p}" for p in pool.places[i]] + [f"topic:{t}" for t in pool.topics[i]]
    return list(dict.fromkeys(ids))


def with_chips(cat, edition: str, stories: list[dict]) -> list[dict]:
    """Topic chips of each card: the topic pages of the edition's pool that list the story (the same pool the
    topic pages are built from, so every chip leads to a page holding it). A story not in the pool has none. Names
    in the edition's language; a generic word's id has no chip (:func:`transforms.articles.entities.display`), and
    two ids one name shows once ("Springfield" the entity and "Springfield" the city code, :func:`_chip_key`)."""
    pool = cat.pools.get(edition)
    t = messages(lang_of(edition))
    for s in stories:
        i = pool.index.get(s["story_id"]) if pool is not None else None
        chips: dict[str, tuple[str, str]] = {}
        for tid in pool_topic_ids(pool, i) if i is not None else []:
            if len(chips) == CHIPS_PER_CARD:
                break
            name = chip_name(tid, t)
            if name is not None:
                chips.setdefault(_chip_key(tid, name), (tid, name))
        s["chips"] = list(chips.values())
    return stories


def _chip_key(topic_id: str, name: str) -> str:
    """Chips of one card with one key show once: one name whatever its apostrophe, and a place with its region
    ("Springfield, Illinois", the article's city) is the place a city code names ("Springfield")."""
    key = name.casefold().replace("’", "'")
    return key.split(", ")[0] if topic_id.startswith("place:") else key


def chip_name(topic_id: str, t=None) -> str | None:
    """The name of a topic id on a chip or a list, or None when it names nothing worth a page (a generic word)."""
    from serving.state.catalog import place_entity
    from transforms.articles.entities import display

    kind, _, value = topic_id.partition(":")
    if kind == "topic":
        return section_title(value, t)
    shown = display(place_entity(value) if kind == "place" else value, getattr(t, "language", None))
    return shown[0] if shown is not None else None


def story_view(cat, story, storyline: str | None = None) -> dict:
    """Full Coverage of a prepared story: articles in the JSON API's order, a timeline by day, publishers, links."""
    cards = [orjson.loads(c) for c in story.cards]
    articles = [_card(c) for c in cards[:STORY_MAX_ARTICLES]]
    timeline: list[tuple[str, list[dict]]] = []
    for a in articles:
        day = a["when"][:10]
        if not timeline or timeline[-1][0] != day:
            timeline.append((day, []))
        timeline[-1][1].append(a)
    publishers = Counter(c.get("publisher_name") or c["publisher_id"] for c in cards)
    links = []
    for sid in story.links:
        entry = cat.stories.get(cat.aliases.get(sid, sid))
        linked = entry.current if entry is not None else None
        links.append(
            {"story_id": sid, "title": linked.title if linked else sid, "language": linked.language if linked else ""}
        )
    return {
        "story_id": story.story_id,
        "version": story.version,
        "title": story.title,
        "language": story.language,
        "article_count": len(story.cards),
        "shown": len(articles),
        "publisher_count": story.publisher_count,
        "timeline": timeline,
        "publishers": sorted(publishers.items(), key=lambda kv: (-kv[1], kv[0])),
        "links": links,
        "storyline_url": f"/storylines/{story.language}/{storyline}" if storyline else None,  # two episodes on
        "opinion": [a for a in articles if "opinion" in a["labels"]],
        "fact_checks": [a for a in articles if "fact_check" in a["labels"]],
    }


# --- routes ------------------------------------------------------------------------------------------------------


@bp.get("/")
def home():
    ext = services()
    cat = ext.holder.current
    if DEFAULT_EDITION in cat.editions or is_configured(ext, DEFAULT_EDITION):
        edition = DEFAULT_EDITION  # configured: its warming-up page until its first pages are live
    elif cat.ready:
        edition = sorted(cat.editions)[0]
    else:
        return not_ready()
    resp = Response(status=302)
    resp.headers["Location"] = f"/e/{edition}/"
    resp.headers["Cache-Control"] = ext.page_cache_control
    return resp


@bp.get("/e/<edition>/")
def edition_page(edition: str):
    return section_page(edition, "top")


@bp.get("/e/<edition>/<section>")
def section_page(edition: str, section: str):
    ext = services()
    cat = ext.holder.current
    if not EDITION.match(edition) or not SECTION.match(section):
        return not_found("There is no such page.")
    page = cat.pages.get((edition, section))
    if page is None:
        if is_configured(ext, edition, section):
            return warming_up(cat, edition, section)
        if not cat.ready:
            return not_ready()
        if edition not in cat.editions:
            return not_found(f"There is no edition {edition}.")
        t = messages(lang_of(edition))
        return not_found(t("not_found.section", section=section_title(section, t)), edition=edition)
    t = messages(lang_of(edition))

    def page_html() -> str:
        return render(
            "web/section.html",
            edition=edition,
            lang=lang_of(edition),
            section=section,
            title=section_title(section, t),
            sections=[(s, section_title(s, t)) for s in sections_of(cat, edition)],
            cycle=page.cycle,
            stories=edition_view(cat, page),
            topics=topic_links(cat, edition) if section == "top" else [],
            pill_version=page.version,
            follow=None if section == "top" else ("topic", section, section_title(section, t)),
            feed_path=f"/e/{edition}/{section}",
        )

    body, etag = cached(cat, ("section", edition, section), page_html)
    return shared(body, etag, ext.section_cache_control(page))


def topic_title(topic_id: str, t=None) -> tuple[str, str]:
    """(display name, what it is) of a topic id: a gazetteer place's name (a region's code is its country, in the
    page's language: ``place:us`` -> United States, never "Us"), the alias table's canonical name for an entity it
    holds (``entity:org:isro`` -> ISRO, an organisation), a section's title, else the id's words as a name
    (:func:`transforms.articles.entities.title_words`: "Lumen's Orbit", not "Lumen'S Orbit")."""
    from serving.state.catalog import place_entity
    from transforms.articles.entities import display, title_words

    kind, _, value = topic_id.partition(":")
    if kind == "topic":
        return section_title(value, t), "Section"
    shown = display(place_entity(value) if kind == "place" else value, getattr(t, "language", None))
    if shown is not None:
        return shown[0], TOPIC_KINDS.get(shown[1], "Place" if kind == "place" else "Topic")
    words = value.split(":", 1)[-1].replace("-", " ").replace("_", " ")
    return (title_words(words) if words.islower() else words), ("Place" if kind == "place" else "Topic")


def topic_links(cat, edition: str) -> list[tuple[str, str]]:
    """(id, name) of the topic pages the editions stage pre-built for ``edition`` this cycle, by name."""
    pool = cat.pools.get(edition)
    ids = sorted(pool.topic_pages) if pool is not None else []
    t = messages(lang_of(edition))
    named = [(tid, name) for tid in ids if (name := chip_name(tid, t)) is not None]
    return sorted(named, key=lambda x: (x[1].casefold(), x[0]))


def topics_index(pool) -> list[tuple[str, list[tuple[str, str, int]]]]:
    """(kind, [(id, name, live stories)]) of every topic page the pool serves, kinds in a fixed order, names A-Z."""
    counts: Counter = Counter()
    for i in range(len(pool.story_ids)):
        counts.update(pool_topic_ids(pool, i))
    groups: dict[str, list[tuple[str, str, int]]] = {}
    t = messages(lang_of(pool.edition))
    for tid, n in counts.items():
        if chip_name(tid, t) is None:
            continue  # a generic word's id ("us", "state"): no entry
        name, kind = topic_title(tid, t)
        groups.setdefault(kind, []).append((tid, name, n))
    order = ["Section", "Place", "Organisation", "Person", "Topic"]
    return [
        (k, sorted(groups[k], key=lambda x: (x[1].casefold(), x[0])))
        for k in sorted(groups, key=lambda k: (order.index(k) if k in order else len(order), k))
    ]


def topics_pool(ext, cat, edition: str):
    """(the edition's candidate pool, None), or (None, the answer when it has none yet): a configured edition
    warms up (200, short TTL), an unknown one is 404, and before the first catalogue 503."""
    pool = cat.pools.get(edition)
    if pool is not None:
        return pool, None
    if is_configured(ext, edition):
        return None, warming_up(cat, edition, "topics")
    return None, (not_ready() if not cat.ready else not_found(f"There is no edition {edition}."))


@bp.get("/e/<edition>/topics")
def topics_page(edition: str):
    """The edition's topics index: every topic page its pool serves, grouped by kind, with live story counts."""
    ext = services()
    cat = ext.holder.current
    if not EDITION.match(edition):
        return not_found("There is no such page.")
    pool, missing = topics_pool(ext, cat, edition)
    if missing is not None:
        return missing
    t = messages(lang_of(edition))

    def page_html() -> str:
        groups = [(t(f"kind.{k}") if t.has(f"kind.{k}") else k, items) for k, items in topics_index(pool)]
        return render(
            "web/topics.html",
            edition=edition,
            lang=lang_of(edition),
            section="topics",
            title=t("nav.topics"),
            groups=groups,
            sections=[(s, section_title(s, t)) for s in sections_of(cat, edition)],
        )

    body, etag = cached(cat, ("topics", edition, pool.version, pool.fingerprint), page_html)
    return shared(body, etag, ext.topic_cache_control)


@bp.get("/e/<edition>/topics/<topic_id>")
def topic_page(edition: str, topic_id: str):
    from serving.api import topics

    ext = services()
    cat = ext.holder.current
    if not EDITION.match(edition) or not topics.TOPIC_ID.match(topic_id):
        return not_found("There is no such page.")
    pool, missing = topics_pool(ext, cat, edition)
    if missing is not None:
        return missing
    found = topics.lookup(ext, cat, pool, edition, topic_id, topics.MAX_LIMIT)
    if found is None:
        t = messages(lang_of(edition))
        return not_found(t("not_found.topic", topic=topic_title(topic_id, t)[0]), edition=edition)
    body, json_etag = found

    t = messages(lang_of(edition))

    def page_html() -> str:
        doc = orjson.loads(body)
        for s in doc["stories"]:
            s["representative"] = _card(s["representative"])
            s["labels"] = story_labels(s)
        title, kind_name = topic_title(topic_id, t)
        return render(
            "web/topic.html",
            edition=edition,
            lang=lang_of(edition),
            title=title,
            kind_name=t(f"kind.{kind_name}") if t.has(f"kind.{kind_name}") else kind_name,
            story_count=doc["story_count"],
            cycle=doc["cycle"],
            stories=with_chips(cat, edition, with_counts(cat, doc["stories"])),
            archive=doc.get("storylines", []),  # its entity's storylines from the storyline index
            sections=[(s, section_title(s, t)) for s in sections_of(cat, edition)],
            json_url=f"/v1/topics/{quote(topic_id, safe=':')}?edition={edition}",
            follow=follow_target(topic_id, title),
            feed_path=f"/e/{edition}/topics/{quote(topic_id, safe='')}",
        )

    page, etag = cached(cat, ("topic", edition, topic_id, json_etag), page_html)
    return shared(page, etag, topics.cache_control(ext, edition, topic_id))


@bp.get("/e/<edition>/for-you")
def for_you_page(edition: str):
    ext = services()
    cat = ext.holder.current
    if not EDITION.match(edition):
        return not_found("There is no such page.")
    if edition not in cat.editions and not is_configured(ext, edition):
        return not_ready() if not cat.ready else not_found(f"There is no edition {edition}.")
    t = messages(lang_of(edition))

    def page_html() -> str:
        return render(
            "web/foryou.html",
            edition=edition,
            lang=lang_of(edition),
            section="for-you",
            title=t("nav.for_you"),
            sections=[(s, section_title(s, t)) for s in sections_of(cat, edition)],
        )

    body, etag = cached(cat, ("foryou", edition), page_html)
    return shared(body, etag, ext.page_cache_control)


@bp.get("/stories/<story_id>")
def story_page(story_id: str):
    ext = services()
    cat = ext.holder.current
    if not STORY_ID.match(story_id):
        return not_found("There is no such story.")
    survivor = cat.aliases.get(story_id)
    if survivor is not None:
        resp = Response(status=301)
        resp.headers["Location"] = f"/stories/{survivor}"
        resp.headers["Cache-Control"] = ext.story_cache_control
        return resp
    try:
        entry = story_entry(ext, cat, story_id)  # on demand for a story not held in memory (serving/api/stories.py)
    except StoreError as exc:
        return unavailable(story_id, exc)
    if entry is None:
        return not_ready() if not cat.ready else not_found("There is no such story (or it has expired).")
    story = entry.current

    def page_html() -> str:
        return render(
            "web/story.html",
            story=story_view(cat, story, linked_storyline(ext, cat, story)),
            lang=story.language or "en",
            editions=live_editions(cat),
            feed_path=f"/stories/{story.story_id}",
        )

    body, etag = cached(cat, ("story", story_id), page_html)
    return shared(body, etag, ext.story_cache_control)


# --- assets ------------------------------------------------------------------------------------------------------

_assets: dict[str, tuple[bytes, str, str]] = {}


def _load_assets() -> dict[str, tuple[bytes, str, str]]:
    if not _assets:
        for path in sorted(STATIC_DIR.iterdir()):
            if path.suffix in ASSET_TYPES:
                data = path.read_bytes()
                _assets[path.name] = (data, etag_of(data), ASSET_TYPES[path.suffix])
    return _assets


def asset_version(name: str) -> str:
    """The content version of a web asset: 10 hex digits of its bytes' hash."""
    return _load_assets()[name][1][2:12]


def asset_url(name: str) -> str:
    """``/assets/{version}/{name}``: the version is in the path, not a query string, because the CDN's cache key
    keeps only the API's query strings (terraform/modules/origin ``cache_query_strings``): a ``?v=`` would share one
    edge copy between versions. A deploy that changes a file changes its URL, so the URL may be immutable."""
    return f"/assets/{asset_version(name)}/{name}"


@bp.app_template_global("asset")
def _asset_global(name: str) -> str:
    return asset_url(name)


@bp.get("/assets/<name>")
def asset(name: str):
    """An unversioned asset URL: the current bytes with a page's TTL."""
    found = _load_assets().get(name)
    if found is None:
        return not_found("There is no such file.")
    data, etag, content_type = found
    return shared(data, etag, services().page_cache_control, content_type)


@bp.get("/assets/<version>/<name>")
def versioned_asset(version: str, name: str):
    """The asset at its content version: immutable for a year (``http.IMMUTABLE``). Another version (a page
    rendered before a deploy asking the new origin) gets the current bytes with a page's TTL, never pinned for a
    year under a URL that names other bytes."""
    found = _load_assets().get(name)
    if found is None:
        return not_found("There is no such file.")
    data, etag, content_type = found
    current = version == asset_version(name)
    cache_control = http.IMMUTABLE if current else services().page_cache_control
    return shared(data, etag, cache_control, content_type)
