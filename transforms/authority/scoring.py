"""Publisher authority from the stores: per publisher, general and per section, shrunk toward the hand-set file.

Input: one *story fact* per stored story (:func:`story_fact` builds it from the story store's row and the article
store's records)::

    {"story_id": int, "section": "business" | None,
     "members": [{"article_id", "publisher_id", "at" (ms), "is_copy", "copy_of", "corrected", "redated"}, ...]}

Per story, :func:`story_evidence` counts for each publisher (and ownership group, ``Publisher.group``: outlets of
one owner are one voice):

- ``articles``   its articles in the story, except copies of a sister outlet's article (same group: the same
                 voice said it once, at the source; neither an original nor a copy of the copier's);
- ``originals``  its articles that are not copies (``is_copy`` / ``copy_of``);
- ``stories``    1 if it has an original in the story;
- ``first``      1 if it wrote the story's earliest original, (at, article_id) order; each group whose earliest
                 original is at that first time is credited once, on its earliest outlet (two sister outlets that
                 break a story together are one first report);
- ``picked_up``  its originals copied (``copy_of``) by a publisher of another group in the story (a copy inside
                 the group is not "picked up by others");
- ``corrected``  its articles whose latest version carries a correction notice (:func:`has_correction`).
- ``redated``    its articles whose stated publication time (``stated_published_at``, the latest version's) is
                 more than ``REDATE_MS`` (24 h) after we first saw the article: the page re-dated an old story to
                 look new. 24 h is beyond any time-zone slip (a zone-less time read in the wrong zone is off by
                 at most 14 h); a developing story's update changes ``dateModified``, not ``datePublished``.
- ``self_copies`` its copies of its *own* articles in the story (``copy_of`` names an article of the same
                 publisher: the same text under another URL, near-duplicate flooding). A sister outlet's copy
                 is syndication inside the group: skipped as before, not counted here.

The counts are summed per (publisher, "") and, when the story has a section (the argmax of its articles' section
labels, earliest section of the editions file on ties: the same primary section the ranker uses), per
(publisher, section). Then, per key, :func:`authority`::

    evidence  = clamp01(0.40 * originals / articles          (original reporting share)
                        + 0.30 * first / stories              (first reports)
                        + 0.30 * picked_up / originals        (picked up by others)
                        - 2.0 * corrected / articles)         (corrections)
    authority = (K * prior + articles * evidence) / (K + articles)          K = 50 (--prior_weight)

Why these weights:

- Original reporting share is the broadest signal (every article contributes) and the one that separates a
  reporting outlet from an aggregator or content farm, so it weighs most (0.40). On its own it caps a publisher
  at 0.40: originality is necessary, not sufficient.
- First reports (0.30) and pickups (0.30) are the two signals that other newsrooms and time agree the reporting
  mattered: being first on stories, and being the text other groups syndicate. Equal weights: neither is more
  reliable than the other, and a wire (high pickup) and a scoop-heavy paper (high first share) both reach ~0.8.
  Together with a full original share, they reach the 0.8-0.95 the hand-set file gives national papers and wires.
- Corrections are a penalty of 2 per corrected article share: a normal rate (1-2 %) costs 0.02-0.04, one
  article in ten corrected costs 0.2. Only published correction notices count: a new version of an article
  (an update of a developing story) is normal and not penalised.
- Abuse (re-dating, flooding) is a behaviour, not a reporting record, so it is not shrunk toward the prior: a
  hand-set 0.9 must not shield a publisher gaming the page. After the shrinkage, :func:`abuse_cut`::

      cut = 3.0 * redated / articles            (only when redated >= 3: a single CMS slip costs nothing)
          + 2.0 * self_copies / (articles + self_copies)      (only when self_copies >= 3)
      authority *= 1 - min(cut, 0.9)            (general and every section; 0.9: never below a tenth)

  One article in ten re-dated costs 30 %; a publisher posting every story twice (half its output copies) hits
  the 0.9 cap. The thresholds are ``AuthorityParams`` (``abuse_min``, ``w_redate``, ``w_flood``,
  ``max_abuse_cut``); the document lists each publisher's ``abuse_cut`` beside its evidence.
- Shrinkage: ``articles`` is the evidence count, ``K`` a pseudo-count of prior articles; a publisher with 5
  articles stays within 10 % of its prior, one with 500 is ~90 % evidence. The prior is the hand-set
  ``authority`` (``topic_authority[section]`` for a section when the file sets it, else the publisher's
  computed general authority, so a section with little evidence follows the publisher); an unknown publisher's
  prior is ``UNKNOWN_AUTHORITY`` (0.1), so it rises above the Breaking threshold (0.5) only on evidence.

Plain Python: the Beam job (transforms/authority/beam.py) and the tests call the same functions.

Name kept: each stage that scores has its own ``scoring.py`` (transforms/editions/cycle/scoring.py ranks stories for
pages, transforms/stories/writer/scoring.py matches articles to stories), always imported through its package.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from transforms.publishers import UNKNOWN_AUTHORITY, PublisherRegistry

W_ORIGINAL = 0.40
W_FIRST = 0.30
W_PICKED_UP = 0.30
W_CORRECTION = 2.0
PRIOR_WEIGHT = 50.0
GENERAL = ""  # the section key of the general authority

REDATE_MS = 24 * 3_600_000  # stated publication time this far after first seen: re-dated
ABUSE_MIN = 3  # re-dated articles / self-copies before either counts ("repeatedly")
W_REDATE = 3.0
W_FLOOD = 2.0
MAX_ABUSE_CUT = 0.9

COUNT_FIELDS = ("articles", "originals", "stories", "first", "picked_up", "corrected", "redated", "self_copies")

# Correction notices as publishers print them (en, es, fr, de), in the title, lede or body of the latest version.
_CORRECTION = re.compile(
    r"\b(correction|corrected|an earlier version of this (article|story)|this (article|story) has been (corrected"
    r"|amended)|fe de errores|rectificaci[oó]n|erratum|rectificatif|korrektur|berichtigung)\b",
    re.IGNORECASE,
)


def has_correction(article: dict | None) -> bool:
    """True when the article's text carries a correction notice (the stores have no correction field)."""
    if not article:
        return False
    text = " ".join(str(article.get(k) or "") for k in ("title", "lede", "body"))
    return bool(_CORRECTION.search(text))


def is_redated(article: dict | None) -> bool:
    """The article's stated publication time is more than ``REDATE_MS`` after its first-seen time (a record
    written before ``stated_published_at`` existed states none: not re-dated)."""
    stated = (article or {}).get("stated_published_at")
    seen = (article or {}).get("first_seen_at")
    return stated is not None and seen is not None and int(stated) - int(seen) > REDATE_MS


def article_section(article: dict | None, label_map: dict[str, str]) -> str | None:
    """The section of an article: its first ``section`` / ``topics`` label the editions file maps (not "top")."""
    if not article:
        return None
    for label in [article.get("section")] + list(article.get("topics") or ()):
        if label and label.lower() in label_map:
            return label_map[label.lower()]
    return None


def story_fact(story: dict, articles: dict[str, dict | None], label_map: dict, section_order: list[str]) -> dict:
    """A story fact from a story store row (``StoryStore.get_story``) and its members' article records
    (``{article_id: record or None}``). The publisher is the article's ``publisher_id``, else the member's
    ``source``."""
    members, counts = [], {}
    for aid, m in sorted(story.get("members", {}).items()):
        art = articles.get(aid)
        sec = article_section(art, label_map)
        if sec:
            counts[sec] = counts.get(sec, 0) + 1
        members.append(
            {
                "article_id": aid,
                "publisher_id": (art or {}).get("publisher_id") or m.get("source") or "unknown",
                "at": int(m.get("at") or (art or {}).get("first_seen_at") or 0),
                "is_copy": bool(m.get("is_copy")),
                "copy_of": m.get("copy_of") or (art or {}).get("copy_of"),
                "corrected": has_correction(art),
                "redated": is_redated(art),
            }
        )
    rank = {s: i for i, s in enumerate(section_order)}
    section = min(counts, key=lambda s: (-counts[s], rank.get(s, len(rank)), s)) if counts else None
    return {"story_id": story["story_id"], "section": section, "members": members}


def story_evidence(fact: dict, group_of: Callable[[str], str]) -> dict[tuple[str, str], dict]:
    """``{(publisher_id, section key): counts}`` of one story fact (see the module docstring)."""
    members = sorted(fact["members"], key=lambda m: (m["at"], m["article_id"]))
    by_id = {m["article_id"]: m for m in members}
    counts: dict[str, dict] = {}

    def c(pid: str) -> dict:
        return counts.setdefault(pid, dict.fromkeys(COUNT_FIELDS, 0))

    originals = []
    for m in members:
        pid = m["publisher_id"]
        source = by_id.get(m["copy_of"]) if m["copy_of"] else None
        is_copy = m["is_copy"] or bool(m["copy_of"])
        if is_copy and source is not None and group_of(source["publisher_id"]) == group_of(pid):
            if source["publisher_id"] == pid:
                c(pid)["self_copies"] += 1  # its own text under another URL: flooding evidence
            continue  # a sister outlet's copy: one voice, counted at the source
        c(pid)["articles"] += 1
        c(pid)["corrected"] += int(bool(m["corrected"]))
        c(pid)["redated"] += int(bool(m.get("redated")))
        if not is_copy:
            c(pid)["originals"] += 1
            originals.append(m)
    for pid in {m["publisher_id"] for m in originals}:
        c(pid)["stories"] = 1
    if originals:
        first_at, credited = originals[0]["at"], set()
        for m in originals:
            g = group_of(m["publisher_id"])
            if m["at"] == first_at and g not in credited:
                credited.add(g)
                c(m["publisher_id"])["first"] = 1
    picked, original_ids = set(), {m["article_id"] for m in originals}
    for m in members:
        source = by_id.get(m["copy_of"]) if m["copy_of"] else None
        if source is None or source["article_id"] not in original_ids:
            continue
        if group_of(source["publisher_id"]) != group_of(m["publisher_id"]):
            picked.add(source["article_id"])
    for aid in picked:
        c(by_id[aid]["publisher_id"])["picked_up"] += 1
    out = {}
    for pid, cnt in counts.items():
        out[(pid, GENERAL)] = cnt
        if fact.get("section"):
            out[(pid, fact["section"])] = dict(cnt)
    return out


def add_counts(a: dict, b: dict) -> dict:
    return {k: a.get(k, 0) + b.get(k, 0) for k in COUNT_FIELDS}


@dataclass(frozen=True)
class AuthorityParams:
    w_original: float = W_ORIGINAL
    w_first: float = W_FIRST
    w_picked_up: float = W_PICKED_UP
    w_correction: float = W_CORRECTION
    prior_weight: float = PRIOR_WEIGHT
    abuse_min: int = ABUSE_MIN
    w_redate: float = W_REDATE
    w_flood: float = W_FLOOD
    max_abuse_cut: float = MAX_ABUSE_CUT

    def to_dict(self) -> dict:
        return asdict(self)


def evidence_score(cnt: dict, p: AuthorityParams = AuthorityParams()) -> float:
    """The evidence term (0..1) of a publisher's counts; 0 without articles."""
    n = cnt.get("articles", 0)
    if n <= 0:
        return 0.0
    o = cnt.get("originals", 0)
    s = (
        p.w_original * o / n
        + p.w_first * (cnt.get("first", 0) / cnt["stories"] if cnt.get("stories") else 0.0)
        + p.w_picked_up * (cnt.get("picked_up", 0) / o if o else 0.0)
        - p.w_correction * cnt.get("corrected", 0) / n
    )
    return min(1.0, max(0.0, s))


def authority(cnt: dict, prior: float, p: AuthorityParams = AuthorityParams()) -> float:
    """Shrinkage of the evidence toward ``prior`` with a pseudo-count of ``p.prior_weight`` articles."""
    n = max(0, cnt.get("articles", 0))
    k = p.prior_weight
    if k + n <= 0:
        return float(prior)
    return (k * prior + n * evidence_score(cnt, p)) / (k + n)


def abuse_cut(cnt: dict, p: AuthorityParams = AuthorityParams()) -> float:
    """The share of authority that re-dating and self-copies cost (module docstring), 0..``max_abuse_cut``."""
    n, redated, copies = cnt.get("articles", 0), cnt.get("redated", 0), cnt.get("self_copies", 0)
    cut = 0.0
    if redated >= p.abuse_min and n > 0:
        cut += p.w_redate * redated / n
    if copies >= p.abuse_min:
        cut += p.w_flood * copies / (n + copies)
    return min(p.max_abuse_cut, cut)


def compute(
    totals: dict[tuple[str, str], dict], registry: PublisherRegistry, p: AuthorityParams = AuthorityParams()
) -> dict[str, dict]:
    """``{publisher_id: {"authority", "topic_authority": {section: x}, "evidence": counts}}`` for every publisher
    of the registry and every publisher with evidence, from the summed counts per (publisher, section key)."""
    ids = sorted({pid for pid, _ in totals} | {pub.publisher_id for pub in registry})
    out = {}
    for pid in ids:
        pub = registry.get(pid)
        prior = pub.authority if pub else UNKNOWN_AUTHORITY
        general = totals.get((pid, GENERAL), dict.fromkeys(COUNT_FIELDS, 0))
        a = authority(general, prior, p)
        keep = 1.0 - abuse_cut(general, p)  # the publisher's behaviour: its general and every section rating
        topics = {}
        for (q, sec), cnt in sorted(totals.items()):
            if q != pid or sec == GENERAL:
                continue
            sec_prior = float(pub.topic_authority[sec]) if pub and sec in pub.topic_authority else a
            topics[sec] = round(authority(cnt, sec_prior, p) * keep, 6)
        out[pid] = {
            "authority": round(a * keep, 6),
            "topic_authority": topics,
            "evidence": dict(general),
            "abuse_cut": round(1.0 - keep, 6),
        }
    return out


def compute_from_facts(
    facts: Iterable[dict], registry: PublisherRegistry, p: AuthorityParams = AuthorityParams()
) -> dict[str, dict]:
    """:func:`compute` over story facts in one process (tests; the Beam job sums the counts in parallel)."""
    totals: dict[tuple[str, str], dict] = {}
    group_of = group_function(registry)
    for fact in facts:
        for key, cnt in story_evidence(fact, group_of).items():
            totals[key] = add_counts(totals.get(key, {}), cnt)
    return compute(totals, registry, p)


def group_function(registry: PublisherRegistry) -> Callable[[str], str]:
    def group_of(pid: str) -> str:
        pub = registry.get(pid)
        return pub.group if pub else pid

    return group_of
