"""What the clusterer knows about one article, and how it is built from the two input shapes.

Reads an ``Article`` record (schemas/avro/article.avsc) or a line of the labelled JSONL schema
(``{id, story_id, language, title, text, published_at, publisher, url, topic}``); writes an :class:`ArticleFeatures`
(plain Python, picklable, with a compact dict form for Beam and the story store).

The labelled fields ``story_id`` and ``topic`` are never read: :func:`from_labelled` drops them before anything
else sees the record (``strip_labels``), so the clusterer cannot use the answer.

Missing times (the labelled ECB+/MEANTIME/UCI files have no ``published_at``) are handled deterministically by
:func:`assign_times`: a record's time is its ``published_at``, else the dateline its body starts with
(:func:`dateline_time`: MEANTIME's Wikinews texts open with "January 25 , 2010", "6 febbraio 2007", "17-Jan-11");
an article with neither gets the previous article's time (in input order) plus one second, starting from
:data:`UNTIMED_EPOCH_MS`, and is flagged ``time_known=False`` so that the scorer neither rewards nor trusts its
(invented) proximity in time.

"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import numpy as np

from transforms.stories.vocabulary import places as placemod
from transforms.stories.vocabulary import text as textmod

LABEL_FIELDS = ("story_id", "topic")
UNTIMED_EPOCH_MS = 946_684_800_000  # 2000-01-01T00:00:00Z: untimed inputs start here, one second apart
UNTIMED_STEP_MS = 1_000
MAX_TERMS = 120
MAX_ENTITIES = 80
BODY_CHARS = 3_000
# A body no longer than this is a lead (a title and its opening paragraph, as AllSides' roundups give: no body
# beyond the lede; 99.6 % of allsides-dev's texts, 22 % of ECB+'s, none of BASIL's). Two ledes of
# :func:`transforms.stories.vocabulary.text.lede_of` (300 characters each).
LEAD_CHARS = 600


@dataclass
class ArticleFeatures:
    article_id: str
    language: str
    first_seen_at: int  # ms; the decision order is (first_seen_at, article_id)
    time_known: bool = True
    # The time is the dateline the body prints (:func:`dateline_time`), a date the text itself states: two texts
    # that state different days disagree on dates (a veto on joining them, transforms/stories/writer/evidence.py).
    dated_by_text: bool = False
    title: str = ""
    lede: str = ""
    source: str = ""  # publisher id, else URL host, else the article id (one source per article)
    copy_of: str | None = None
    terms: tuple[str, ...] = ()  # unique lexical terms (title + lede + first BODY_CHARS of the body), capped
    term_tf: tuple[int, ...] = ()  # their counts, aligned with ``terms``
    entities: tuple[str, ...] = ()  # unique entity keys, capped
    places: tuple[str, ...] = ()  # the places it reports from, as key chains (transforms/stories/vocabulary/places.py)
    vector: np.ndarray | None = None  # clustering embedding (per-language backend), float32, L2-normalised
    link_vector: np.ndarray | None = None  # multilingual embedding for cross-language links, or None
    model: str = ""
    has_body: bool = True
    lead_only: bool = False  # its body is a lead only (at most LEAD_CHARS): docs/stories.md, "Leads without time"
    record: dict | None = field(default=None, repr=False)  # the Article record, passed through to changes

    @property
    def order_key(self) -> tuple[int, str]:
        return (self.first_seen_at, self.article_id)

    @property
    def embed_text(self) -> str:
        return textmod.embed_text(self.title, self.lede)

    def to_dict(self, with_record: bool = True) -> dict:
        d = {
            "article_id": self.article_id,
            "language": self.language,
            "first_seen_at": int(self.first_seen_at),
            "time_known": bool(self.time_known),
            "dated_by_text": bool(self.dated_by_text),
            "title": self.title,
            "lede": self.lede,
            "source": self.source,
            "copy_of": self.copy_of,
            "terms": list(self.terms),
            "term_tf": [int(x) for x in self.term_tf],
            "entities": list(self.entities),
            "places": list(self.places),
            "vector": encode_vector(self.vector),
            "link_vector": encode_vector(self.link_vector),
            "model": self.model,
            "has_body": bool(self.has_body),
            "lead_only": bool(self.lead_only),
        }
        if with_record and self.record is not None:
            d["record"] = self.record
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ArticleFeatures:
        return cls(
            article_id=d["article_id"],
            language=d["language"],
            first_seen_at=int(d["first_seen_at"]),
            time_known=bool(d.get("time_known", True)),
            dated_by_text=bool(d.get("dated_by_text", False)),
            title=d.get("title", ""),
            lede=d.get("lede", ""),
            source=d.get("source", ""),
            copy_of=d.get("copy_of"),
            terms=tuple(d.get("terms", ())),
            term_tf=tuple(d.get("term_tf", ())),
            entities=tuple(d.get("entities", ())),
            places=tuple(d.get("places", ())),
            vector=decode_vector(d.get("vector")),
            link_vector=decode_vector(d.get("link_vector")),
            model=d.get("model", ""),
            has_body=bool(d.get("has_body", True)),
            lead_only=bool(d.get("lead_only", False)),
            record=d.get("record"),
        )


def encode_vector(v: np.ndarray | None) -> str | None:
    """float32 bytes, base64: exact round trip (the restored clusterer must see bit-identical vectors)."""
    if v is None:
        return None
    return base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(s: str | None) -> np.ndarray | None:
    if s is None:
        return None
    return np.frombuffer(base64.b64decode(s), dtype="<f4").astype(np.float32)


def normalise(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def lexical(
    title: str, lede: str, body: str, language: str
) -> tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...]]:
    """(terms, counts, entities) of an article, capped and sorted deterministically."""
    counts: dict[str, int] = {}
    for t in textmod.terms(f"{title} {lede} {body[:BODY_CHARS]}" if body else f"{title} {lede}", language):
        counts[t] = counts.get(t, 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_TERMS]
    top.sort()
    ents = sorted(textmod.entities(title, body or lede, language))[:MAX_ENTITIES]
    return tuple(t for t, _ in top), tuple(c for _, c in top), tuple(ents)


def _source(publisher: str | None, url: str | None, article_id: str) -> str:
    if publisher:
        return publisher.strip().lower()
    if url:
        host = urlsplit(url).hostname or ""
        if host:
            return host.removeprefix("www.")
    return f"article:{article_id}"


def strip_labels(record: dict) -> dict:
    """The record without its gold labels (the pipeline must never see them)."""
    return {k: v for k, v in record.items() if k not in LABEL_FIELDS}


def parse_time(value) -> int | None:
    """ms since the epoch from an int (ms), an ISO 8601 string or a date; None when missing or unreadable."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return int(value)
    s = str(value).strip()
    try:
        if len(s) == 10:
            d = dt.datetime.strptime(s, "%Y-%m-%d").replace(tzinfo=dt.UTC)
        else:
            d = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
            if d.tzinfo is None:
                d = d.replace(tzinfo=dt.UTC)
        return int(d.timestamp() * 1000)
    except ValueError:
        return None


_DATELINE_MAX = 40
_DATE_LANGUAGES = ("en", "es", "it", "nl", "fr", "de", "pt")
# Absolute dates only, all three parts required, read as UTC: nothing relative to "now", so a rerun reads the same.
_DATEPARSER_SETTINGS = {
    "PARSERS": ["absolute-time"],
    "REQUIRE_PARTS": ["day", "month", "year"],
    "TIMEZONE": "UTC",
    "RETURN_AS_TIMEZONE_AWARE": True,
    "DATE_ORDER": "DMY",
}


def dateline_time(text: str | None, language: str | None = None) -> int | None:
    """ms since the epoch of a dateline: a short first line of the body that states a date (Wikinews and wire
    copy start so: "January 25 , 2010", "9 de junio del 2007", "6 febbraio 2007", "17-Jan-11"); None otherwise.

    Used only when a record has no ``published_at``: the date the text itself prints is the best evidence of when it
    was published, and without it two reports of the same kind of event years apart look alike (MEANTIME's Apple
    Corps lawsuits of 2003, 2006 and 2007). The whole first line must be short (a dateline, not a sentence). Parsed
    by ``dateparser`` (absolute dates only) in the article's language and English (wire datelines such as
    "17-Jan-11" are English in every language), or in the seven languages of our editions when it is unknown.
    """
    if not text:
        return None
    first = text.lstrip().split("\n", 1)[0].strip()
    if not first or len(first) > _DATELINE_MAX or not any(ch.isdigit() for ch in first):
        return None
    import dateparser
    from dateparser.search import search_dates

    lang = (language or "").lower()[:2]
    languages = (
        [lang, "en"] if lang in _DATE_LANGUAGES and lang != "en" else ["en"] if lang == "en" else list(_DATE_LANGUAGES)
    )
    found = dateparser.parse(first, languages=languages, settings=_DATEPARSER_SETTINGS)
    if found is None:  # a date inside the line ("2010 8 de junio de 2010"): the last one it states
        hits = search_dates(first, languages=languages, settings=_DATEPARSER_SETTINGS) or []
        found = hits[-1][1] if hits else None
    return int(found.timestamp() * 1000) if found is not None else None


def record_time(record: dict) -> int | None:
    """A labelled record's publication time: ``published_at``, else the body's dateline (:func:`dateline_time`)."""
    t = parse_time(record.get("published_at"))
    return t if t is not None else dateline_time(record.get("text"), record.get("language"))


def labelled_article_id(record: dict) -> str:
    rid = record.get("id")
    if rid:
        return str(rid)
    basis = f"{record.get('url') or ''}\n{record.get('title') or ''}"
    return hashlib.sha256(basis.encode()).hexdigest()[:32]


def is_lead(body: str) -> bool:
    """Whether a body is a lead only (a text, at most LEAD_CHARS long)."""
    return 0 < len(body.strip()) <= LEAD_CHARS


def from_labelled(record: dict, first_seen_at: int, time_known: bool) -> ArticleFeatures:
    """Features of one labelled-JSONL line (labels stripped first). Vectors are added by the embedder."""
    r = strip_labels(record)
    body = r.get("text") or ""
    title = textmod.title_of(r.get("title") or "", body)  # no title: the lede's first sentence
    language = (r.get("language") or "und").strip().lower() or "und"
    lede = textmod.lede_of(title, body)
    terms, tf, ents = lexical(title, lede, body, language)
    aid = labelled_article_id(r)
    return ArticleFeatures(
        article_id=aid,
        language=language,
        first_seen_at=int(first_seen_at),
        time_known=time_known,
        dated_by_text=time_known and parse_time(r.get("published_at")) is None,
        title=title,
        lede=lede,
        source=_source(r.get("publisher"), r.get("url"), aid),
        copy_of=r.get("copy_of"),
        terms=terms,
        term_tf=tf,
        entities=ents,
        places=placemod.chains(title, body or lede, language),
        has_body=bool(body.strip()),
        lead_only=is_lead(body),
    )


def from_article(article: dict) -> ArticleFeatures:
    """Features of an ``Article`` record. Uses the record's entities when the articles stage provided them, plus our
    own entity keys from title and body (the articles stage may not extract numbers)."""
    language = (article.get("language") or "und").lower()
    body = article.get("body") or ""
    title = textmod.title_of(article.get("title") or "", body)  # no title: the lede's first sentence
    lede = (article.get("lede") or "").strip() or textmod.lede_of(title, body)
    terms, tf, ents = lexical(title, lede, body, language)
    extra = set()
    for e in article.get("entities") or []:
        for part in textmod.terms(e.get("name") or "", language):
            extra.add(part)
    if extra:
        ents = tuple(sorted(set(ents) | extra)[:MAX_ENTITIES])
    return ArticleFeatures(
        article_id=article["article_id"],
        language=language,
        first_seen_at=int(article["first_seen_at"]),
        time_known=True,
        title=title,
        lede=lede,
        source=_source(article.get("publisher_id"), article.get("canonical_url"), article["article_id"]),
        copy_of=article.get("copy_of"),
        terms=terms,
        term_tf=tf,
        entities=ents,
        places=placemod.chains(title, body or lede, language),
        has_body=bool(body.strip()),
        lead_only=is_lead(body),
        record=article,
    )


def time_after(record: dict, prev: int | None) -> tuple[int, bool]:
    """(first_seen_at, time_known) of a record read after one at ``prev``: its own time (:func:`record_time`), else
    ``prev`` + 1 s (from :data:`UNTIMED_EPOCH_MS` for the first), flagged unknown (see the module docstring)."""
    t = record_time(record)
    if t is not None:
        return t, True
    return (prev if prev is not None else UNTIMED_EPOCH_MS - UNTIMED_STEP_MS) + UNTIMED_STEP_MS, False


def assign_times(records: list[dict]) -> list[tuple[dict, int, bool]]:
    """(record, first_seen_at, time_known) in input order (:func:`time_after` along the list)."""
    out = []
    prev: int | None = None
    for r in records:
        prev, known = time_after(r, prev)
        out.append((r, prev, known))
    return out
