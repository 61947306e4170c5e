"""Normalisation: a fetched page (RawItem) becomes an Article record, or is rejected with a reason.

Reads: ``RawItem`` dicts (schemas/avro/raw_item.avsc: fetched/final URL, HTTP status and headers, body bytes, fetch
and first-seen times, the feed entry), the publisher registry (transforms/publishers.py) and the entity alias
table. Writes: ``Article`` dicts (schemas/avro/article.avsc) with ``version=1`` and no syndication fields (dedupe
and syndication fill those), or raises :class:`~transforms.articles.page.Rejected`.

Plain Python, no Beam: the DoFn in :mod:`transforms.articles.beam`, ``newsroom extract`` and the benchmark
all call :meth:`Normalizer.normalize` / :meth:`Normalizer.extract`.

Steps (cost on a 150 KB page, 1 core, measured by benchmarks/articles_bench.py): decode + sniff + parse (~5 ms),
structured data (~2 ms), canonical URL, publication time (htmldate only when nothing is stated), body (~15 ms;
see body.py), language (~0.3 ms), entities (~1-2 ms), section/topics/flags, content hash.

Dead-letter reasons raised here: http_error, too_large, empty_body, not_html, undecodable, xml_bomb, future_date.
"""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from transforms.articles import body as body_mod
from transforms.articles import dates, entities, entity_aliases, language, page, structured, urls
from transforms.articles.page import Rejected

MIN_BODY_CHARS = 40
LEDE_MAX_CHARS = 400

# Section names (article:section, articleSection, URL path, feed categories) -> edition topics.
TOPIC_WORDS = {
    "world": (
        "world",
        "international",
        "internacional",
        "mundo",
        "monde",
        "ausland",
        "esteri",
        "buitenland",
        "global",
        "foreign",
        "asia",
        "europe",
        "africa",
        "americas",
        "middle-east",
        "middle east",
        "mideast",
    ),
    "politics": (
        "politics",
        "political",
        "politica",
        "política",
        "politique",
        "politik",
        "election",
        "elections",
        "elecciones",
        "government",
        "congress",
        "parliament",
    ),
    "business": (
        "business",
        "economy",
        "economia",
        "economía",
        "économie",
        "wirtschaft",
        "finance",
        "finanzas",
        "markets",
        "mercados",
        "money",
        "companies",
        "empresas",
        "dealbook",
        "economics",
        "bourse",
    ),
    "technology": (
        "technology",
        "tech",
        "tecnologia",
        "tecnología",
        "technologie",
        "technik",
        "digital",
        "internet",
        "gadgets",
        "science & technology",
        "ciencia y tecnología",
    ),
    "science": (
        "science",
        "ciencia",
        "ciência",
        "sciences",
        "wissenschaft",
        "scienza",
        "space",
        "espacio",
        "climate",
        "environment",
        "medio ambiente",
        "umwelt",
    ),
    "health": (
        "health",
        "salud",
        "saúde",
        "santé",
        "gesundheit",
        "salute",
        "medicine",
        "wellness",
        "coronavirus",
        "covid",
    ),
    "sports": (
        "sport",
        "sports",
        "deportes",
        "esportes",
        "desporto",
        "calcio",
        "football",
        "soccer",
        "fútbol",
        "futebol",
        "fussball",
        "nfl",
        "nba",
        "mlb",
        "nhl",
        "tennis",
        "golf",
        "cricket",
        "rugby",
        "f1",
        "formula 1",
        "motorsport",
        "nascar",
    ),
    "entertainment": (
        "entertainment",
        "entretenimiento",
        "culture",
        "cultura",
        "kultur",
        "arts",
        "movies",
        "film",
        "cine",
        "music",
        "música",
        "musique",
        "musik",
        "tv",
        "television",
        "celebrity",
        "showbiz",
        "gente",
        "famosos",
        "books",
        "libros",
    ),
    "lifestyle": (
        "lifestyle",
        "life",
        "style",
        "food",
        "travel",
        "viajes",
        "fashion",
        "moda",
        "home",
        "living",
        "estilo",
        "leben",
        "recipes",
    ),
    "opinion": (
        "opinion",
        "opinión",
        "opinião",
        "opinione",
        "meinung",
        "kommentar",
        "commentary",
        "editorial",
        "editorials",
        "op-ed",
        "oped",
        "columns",
        "columnists",
        "tribune",
        "commentisfree",
        "ideas",
    ),
    "local": (
        "local",
        "metro",
        "nation",
        "national",
        "us",
        "u.s.",
        "region",
        "regional",
        "city",
        "cidades",
        "comunidad",
    ),
}
_TOPIC_RE = {
    t: re.compile(r"(?:^|[\s/_,-])(?:" + "|".join(map(re.escape, ws)) + r")(?:$|[\s/_,-])", re.I)
    for t, ws in TOPIC_WORDS.items()
}
_OPINION_RE = re.compile(
    r"(?:^|[/\s_-])(opinion|opinions|opini[oó]n|opini[aã]o|opinione|meinung|kommentar|commentary|editorials?|op-?ed|"
    r"columns?|columnists?|commentisfree|tribunes?|chroniques?|blogs?/opinion|point-of-view|perspectives?)(?:$|[/\s_-])",
    re.I,
)
_FACTCHECK_RE = re.compile(
    r"(fact[\s_-]?checks?|fact[\s_-]?checking|faktencheck|faktenfuchs|verificaci[oó]n|verifica[cç][aã]o|"
    r"comprova|v[eé]rification|d[eé]codeurs|desintox|factchecker|truth-o-meter|politifact)",
    re.I,
)


def content_hash(title: str, body: str) -> str:
    """sha256 of the normalised title + body: NFKC, case-folded, word tokens only (punctuation and spacing changes
    do not make a new version; any changed word does)."""

    def norm(s: str) -> str:
        return " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", s or "").casefold()))

    return hashlib.sha256((norm(title) + "\n" + norm(body)).encode("utf-8")).hexdigest()


def _clean_title(t: str, site_names: list[str]) -> str:
    t = " ".join((t or "").split())
    if not t:
        return ""
    for sep in (" | ", " - ", " – ", " — ", " :: ", " · ", " » ", " : "):
        if sep in t:
            parts = t.split(sep)
            # drop a site-name part at either end
            names = {n.casefold() for n in site_names if n}
            while len(parts) > 1 and (parts[-1].strip().casefold() in names or _is_siteish(parts[-1], names)):
                parts.pop()
            while len(parts) > 1 and (parts[0].strip().casefold() in names):
                parts.pop(0)
            t = sep.join(parts)
    return t.strip()


def _is_siteish(part: str, names: set[str]) -> bool:
    p = part.strip().casefold()
    if not p:
        return True
    return any(n and (n in p or p in n) for n in names) and len(p) < 40


def _first_string(*values) -> str:
    for v in values:
        s = structured.as_text(v) if not isinstance(v, str) else v
        if s and s.strip():
            return s.strip()
    return ""


def _lede(body: str, description: str) -> str:
    for para in body.split("\n"):
        para = para.strip()
        if len(para) >= 80 or (len(para) >= 30 and para[-1:] in ".!?。！？"):
            return _truncate(para, LEDE_MAX_CHARS)
    if description:
        return _truncate(description, LEDE_MAX_CHARS)
    return _truncate(body.strip().split("\n", 1)[0], LEDE_MAX_CHARS)


def _truncate(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    m = re.search(r"^(.*[.!?。！？])\s", cut)
    if m and len(m.group(1)) > limit // 2:
        return m.group(1)
    return cut.rsplit(" ", 1)[0] + "…"


def _section_from_path(url: str | None) -> str:
    if not url:
        return ""
    segs = [s for s in urlsplit(url).path.split("/") if s]
    for s in segs[:-1][:2]:  # the last segment is the slug
        s = s.lower()
        if re.fullmatch(
            r"\d+|[a-z]{2}(-[a-z]{2})?|news|article|articles|story|stories|index\.html?|amp|www|c|a|p|s", s
        ):
            continue
        if len(s) <= 30 and re.fullmatch(r"[\w-]+", s) and not re.search(r"\d{3,}", s):
            return s.replace("_", "-")
    return ""


def topics_for(*labels: str) -> list[str]:
    found = set()
    for label in labels:
        if not label:
            continue
        probe = " " + label.lower().replace("-", " ") + " "
        for topic, rx in _TOPIC_RE.items():
            if rx.search(probe) or rx.search(label.lower()):
                found.add(topic)
    return sorted(found)


def _image_url(value) -> str:
    if isinstance(value, list):
        return next((u for u in (_image_url(v) for v in value) if u), "")
    if isinstance(value, dict):
        for k in ("url", "contentUrl", "@id"):
            if isinstance(value.get(k), str):
                return value[k]
        return ""
    return value if isinstance(value, str) else ""


def _https(url: str | None, base: str | None) -> str | None:
    if not url or not isinstance(url, str):
        return None
    try:
        u = urljoin(base, url.strip()) if base else url.strip()
    except ValueError:
        return None
    if u.startswith("//"):
        u = "https:" + u
    return u if re.match(r"https?://[^/\s]+\.[^/\s]+", u) else None


@dataclass(frozen=True)
class _Labels:
    """What the page's markup says the article is (read before the body step, which modifies the tree)."""

    types: set
    section: str  # articleSection / article:section, else the first feed category, else the URL path's section
    path_section: str
    categories: list
    keywords: list
    image: str | None
    image_size: tuple  # (width, height) the page states for ``image`` (structured.image_size), else (None, None)


def _title_and_description(pm, art_ld: dict, entry: dict, publisher_name: str, url: str | None) -> tuple[str, str]:
    """The headline without the site name (JSON-LD, og/twitter title, h1, <title>, feed entry) and the description."""
    site_names = [pm.meta.get("og:site_name", ""), publisher_name, urls.registrable(urls.host_of(url or ""))]
    raw_title = _first_string(
        art_ld.get("headline"),
        pm.meta.get("og:title"),
        pm.meta.get("twitter:title"),
        pm.h1,
        pm.title_tag,
        entry.get("title"),
    )
    description = _first_string(pm.meta.get("description"), pm.meta.get("og:description"), art_ld.get("description"))
    return _clean_title(raw_title, site_names), description


def _classify(labels: _Labels, pm, url: str | None) -> tuple[list[str], bool, bool]:
    """Edition topics, is_opinion and is_fact_check from the markup, the section and the URL path."""
    topics = topics_for(labels.section, labels.path_section, *labels.categories[:5])
    path = urlsplit(url or "").path
    opinion_markup = (
        bool(labels.types & {"opinionnewsarticle"}) or str(pm.meta.get("article:opinion", "")).lower() == "true"
    )
    is_opinion = opinion_markup or bool(_OPINION_RE.search(labels.section or "") or _OPINION_RE.search(path))
    is_fact_check = "claimreview" in labels.types or bool(
        _FACTCHECK_RE.search(labels.section or "") or _FACTCHECK_RE.search(path)
    )
    if is_opinion and "opinion" not in topics:
        topics = sorted(set(topics) | {"opinion"})
    return topics, is_opinion, is_fact_check


class Normalizer:
    """Plain-Python normalisation. One instance per worker (holds the registry and alias table)."""

    def __init__(self, registry=None, aliases=None, clock=None):
        from transforms.publishers import default_registry

        self.registry = registry if registry is not None else default_registry()
        self.aliases = aliases if aliases is not None else entity_aliases.default_aliases()
        self.clock = clock or (lambda: int(time.time() * 1000))

    # ---- RawItem -> Article -------------------------------------------------------------------------------
    def normalize(self, raw: dict) -> dict:
        """A RawItem dict -> an Article dict (version 1). Raises Rejected."""
        status = int(raw.get("http_status") or 0)
        if status and not 200 <= status < 300:
            raise Rejected("http_error", f"HTTP {status}")
        page_url = raw.get("final_url") or raw.get("fetched_url")
        entry = raw.get("entry") or {}
        first_seen = raw.get("first_seen_at") or raw.get("fetched_at") or self.clock()
        now = raw.get("fetched_at") or self.clock()
        art = self.extract(
            raw.get("body"),
            url=page_url,
            headers=raw.get("headers") or {},
            now_ms=max(now, first_seen),
            entry=entry,
            feed_publisher_id=raw.get("publisher_id"),
        )
        stated = art.pop("_stated_ms")
        art.pop("_diagnostics", None)
        art["fetched_url"] = raw.get("fetched_url") or page_url or ""
        art["raw_item_id"] = raw.get("item_id")
        art["first_seen_at"] = int(first_seen)
        art["published_at"] = int(min(stated, first_seen)) if stated is not None else int(first_seen)
        if art["canonical_url"] is None:
            raise Rejected("no_url", "neither a fetched URL nor a canonical link")
        return art

    # ---- page bytes -> Article fields ----------------------------------------------------------------------
    def extract(
        self,
        body: bytes,
        url: str | None = None,
        headers: dict | None = None,
        now_ms: int | None = None,
        entry: dict | None = None,
        feed_publisher_id: str | None = None,
    ) -> dict:
        """Everything the page itself yields. ``published_at`` is left to the caller; ``_stated_ms`` carries the
        stated publication time (or None) and ``_diagnostics`` how each field was chosen."""
        entry = entry or {}
        text, tree = page.load(body, headers)
        pm = structured.read(tree)
        art_ld = pm.article or {}
        canonical, canonical_source = self._canonical(url, pm, art_ld)
        publisher = self._publisher(url, canonical, feed_publisher_id)
        published = dates.choose(
            pm, entry.get("published"), publisher.timezone, now_ms, tree=tree, url=url or canonical
        )
        title, description = _title_and_description(pm, art_ld, entry, publisher.name, canonical or url)
        labels = self._labels(pm, art_ld, entry, canonical, url)  # before the body step: it modifies the tree

        # body (modifies the tree: last of the tree readers)
        ld_body = art_ld.get("articleBody") if isinstance(art_ld.get("articleBody"), str) else None
        extracted = body_mod.extract(tree, text, title, ld_body, reparse=page.parse)
        body_text = extracted.text
        if len(body_text.strip()) < MIN_BODY_CHARS:
            raise Rejected("empty_body", f"{len(body_text.strip())} characters of article text")
        if not title:
            title = _truncate(body_text.split("\n", 1)[0], 120)

        lede = _lede(body_text, description)
        lang, lang_prob = language.detect(body_text, title, lede, pm.html_lang or pm.meta.get("content-language", ""))
        ents = entities.extract(title, body_text, lang, art_ld, labels.keywords, self.aliases)
        topics, is_opinion, is_fact_check = _classify(labels, pm, canonical or url)
        return {
            "schema_version": 1,
            "article_id": urls.article_id(canonical) if canonical else None,
            "version": 1,
            "canonical_url": canonical,
            "canonical_source": canonical_source,
            "fetched_url": url or "",
            "raw_item_id": None,
            "publisher_id": publisher.publisher_id,
            "publisher_name": publisher.name,
            "language": lang,
            "title": title,
            "lede": lede,
            "body": body_text,
            "image_url": labels.image,
            "image_width": labels.image_size[0],
            "image_height": labels.image_size[1],
            "published_at": None,
            "first_seen_at": None,
            "modified_at": published.modified_ms,
            "entities": ents,
            "keywords": labels.keywords,
            "section": (labels.section or None) and labels.section.strip().lower()[:80],
            "topics": topics,
            "is_opinion": is_opinion,
            "is_fact_check": is_fact_check,
            "content_hash": content_hash(title, body_text),
            "copy_of": None,
            "syndication_group": None,
            "stated_published_at": published.stated_ms,
            "accessible_for_free": structured.accessible_for_free(pm),
            "_stated_ms": published.stated_ms,
            "_diagnostics": {
                "published_source": published.source,
                "body_method": extracted.method,
                "language_prob": round(lang_prob, 3),
            },
        }

    def _canonical(self, url: str | None, pm, art_ld: dict) -> tuple[str | None, str]:
        """The canonical URL and where it came from (rel=canonical, og:url, JSON-LD, twitter:url, self-references)."""
        ld_url = _first_string(art_ld.get("url"), art_ld.get("mainEntityOfPage"))
        return urls.canonical(
            url,
            [
                ("rel_canonical", pm.links.get("canonical")),
                ("og_url", pm.meta.get("og:url")),
                ("json_ld", ld_url),
                ("twitter_url", pm.meta.get("twitter:url")),
            ],
            self.registry,
            fallbacks=[("self_reference", u) for u in pm.self_refs[:3]],
        )

    def _labels(self, pm, art_ld: dict, entry: dict, canonical: str | None, url: str | None) -> _Labels:
        """Section, feed categories, article types, keywords and image: what the page's markup says it is."""
        section = _first_string(
            art_ld.get("articleSection"), pm.meta.get("article:section"), pm.meta.get("og:article:section")
        )
        categories = [c for c in (entry.get("categories") or []) if isinstance(c, str)]
        path_section = _section_from_path(canonical or url)
        image = _https(
            _first_string(
                pm.meta.get("og:image"),
                pm.meta.get("twitter:image"),
                _image_url(art_ld.get("image")),
                _image_url(art_ld.get("thumbnailUrl")),
            ),
            url or canonical,
        )
        return _Labels(
            types=structured.article_types(pm),
            section=section or (categories[0] if categories else "") or path_section,
            path_section=path_section,
            categories=categories,
            keywords=self._keywords(pm, art_ld),
            image=image,
            image_size=structured.image_size(pm, image, lambda u: _https(u, url or canonical)),
        )

    def _publisher(self, url: str | None, canonical: str | None, feed_publisher_id: str | None):
        for u in (url, canonical):
            host = urls.host_of(u)
            if host:
                p = self.registry.for_host(host)
                if p.known:
                    return p
        if feed_publisher_id:
            p = self.registry.get(feed_publisher_id)
            if p is not None:
                return p
        return self.registry.for_host(urls.host_of(url or canonical) or "unknown")

    @staticmethod
    def _keywords(pm, art_ld: dict) -> list[str]:
        raw = structured.as_list(art_ld.get("keywords"))
        raw += structured.as_list(pm.meta.get("news_keywords"))
        raw += structured.as_list(pm.meta.get("keywords"))
        for tag in pm.meta_all.get("article:tag", []):
            raw += structured.as_list(tag)
        seen, out = set(), []
        for k in raw:
            k = " ".join(k.split())
            if not k or len(k) > 60 or k.casefold() in seen:
                continue
            seen.add(k.casefold())
            out.append(k)
            if len(out) >= 20:
                break
        return out
