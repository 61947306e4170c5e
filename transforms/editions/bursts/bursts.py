"""Bursts: windowed counts of originals and publishers per story, the Breaking rule, and burst poll requests.

Plain Python: the rules and records. The Beam side (windows, CombineFn, the keyed poll timer) is
:class:`~transforms.editions.beam.detection.DetectBursts`.

Reads StoryChange records (NEW_STORY / ASSIGN of an original, i.e. not a copy); writes burst pulses (plain dicts,
consumed by RankEditions) and FetchRequest records (schemas/avro/fetch_request.avsc, kind BURST, topic
fetch-requests, consumed by the ingest job).

Counting uses Beam windows on the article's first-seen time (event time):
- sliding 5-minute windows every minute: originals, distinct publishers, distinct publishers whose (topic)
  authority is > 0.5. Breaking (DESIGN.md section 5) when originals >= 10 AND strong publishers >= 5 AND the
  Poisson tail P(X >= originals | lambda) < 1e-6, lambda being the baseline rate of originals a NEW story of that
  topic gets in 5 minutes (editions.json ``bursts.baseline_per_5min``; the story's topic is the most common
  section among the window's originals). Counts alone would call every busy sports afternoon a burst; the
  baseline makes "10 in 5 minutes" mean more for a quiet topic than for a busy one.
- sliding 30-minute windows every minute: the velocity surge that labels a story "developing"
  (>= 5 originals, >= 3 publishers, Poisson tail < 1e-3 against 6 x the 5-minute baseline). The ranker's velocity
  *score* uses the same 30-minute count computed from its own table for every live story each minute (shipping
  a 30-minute count per active story per minute to ~20 edition keys would be ~1 M elements a minute); the windowed
  counts here drive only the labels.

Late data: windows allow ``allowed_lateness_s`` (600 s) with an accumulating late pane per late element, so a burst
completed by late originals is still detected (a pulse id is per story, kind and window: replays and repeated
panes are idempotent downstream). The window result carries the window's end - 1 us as its timestamp, so it
reaches RankEditions before the watermark passes the minute boundary: the cycle of that minute pins the story.

Burst polls: the earliest breaking window of a story (then at most one every ``fetch_repeat_min``, 30 min) asks the
ingest job to poll, at the 1-minute floor for ``fetch_ttl_min`` (60 min), the feeds of at most
``fetch_max_publishers`` (50) publishers, chosen by :func:`transforms.editions.bursts.coverage.pull_publishers`: those
covering the story or a linked one, those of its region, those that covered its entities before, then the
authoritative ones and wires, in the story's language or a linked story's (the rule and its bounds:
:mod:`transforms.editions.bursts.coverage`).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter

from transforms.common import MINUTE_MS, PLACEMENTS, is_stale
from transforms.editions.bursts.coverage import ARTICLE_ENTITIES, REASONS, pull_publishers
from transforms.editions.vocabulary.params import BurstParams
from transforms.publishers import UNKNOWN_AUTHORITY


def poisson_tail(k: int, lam: float) -> float:
    """P(X >= k) for X ~ Poisson(lam), summed from the upper terms (no cancellation for tiny tails)."""
    if k <= 0:
        return 1.0
    if lam <= 0:
        return 0.0
    log_term = -lam + k * math.log(lam) - math.lgamma(k + 1)
    total, i = 0.0, k
    while True:
        term = math.exp(log_term)
        total += term
        i += 1
        log_term += math.log(lam) - math.log(i)
        if term < total * 1e-17 or i > k + 10_000:
            break
    return min(1.0, total)


def is_strong(authority, floor: float):
    """A strong publisher: authority above ``floor`` (``bursts.strong_authority``, 0.5). Works on a number or a
    numpy array: the Breaking rule counts strong publishers per window, the ranker's corroboration gate
    (transforms/editions/cycle/trust.py) per candidate story."""
    return authority > floor


def judge_breaking(originals: int, strong_publishers: int, topic: str | None, p: BurstParams) -> tuple[bool, float]:
    pv = poisson_tail(originals, p.baseline(topic, p.window_min))
    ok = originals >= p.min_originals and strong_publishers >= p.min_strong_publishers and pv < p.max_p_value
    return ok, pv


def judge_developing(originals: int, publishers: int, topic: str | None, p: BurstParams) -> tuple[bool, float]:
    pv = poisson_tail(originals, p.baseline(topic, p.velocity_window_min))
    ok = originals >= p.developing_min_originals and publishers >= 3 and pv < p.developing_max_p_value
    return ok, pv


# ------------------------------------------------------------------------------------------ windowed counts
def originals_of(change: dict, registry, label_map: dict):
    """(story_id, observation, first-seen ms) for an original's placement; nothing for copies and other kinds."""
    if change.get("kind") not in PLACEMENTS or change.get("is_copy"):
        return
    art = change.get("article")
    if not art or art.get("copy_of"):
        return
    fs = int(art.get("first_seen_at") or change["at"])
    if is_stale(art.get("published_at"), fs):  # an old page discovered today is no burst (common.is_stale)
        return
    section = None
    for lab in [art.get("section")] + list(art.get("topics") or ()):
        if lab and lab.lower() in label_map:
            section = label_map[lab.lower()]
            break
    pub = registry.get(art.get("publisher_id") or "")
    authority = pub.authority_for(section) if pub else UNKNOWN_AUTHORITY
    region = pub.region if pub else ""
    obs = {
        "article_id": art["article_id"],
        "publisher_id": art.get("publisher_id") or "unknown",
        "authority": float(authority),
        "region": region,
        "section": section,
        "language": change["language"],
        "entities": [e.get("id") for e in (art.get("entities") or ())[:ARTICLE_ENTITIES] if e.get("id")],
        "first_seen_at": fs,
    }
    yield int(change["story_id"]), obs, fs


def new_counts() -> dict:
    """The accumulator of one story's originals in one window (see :func:`add_original`)."""
    return {
        "articles": set(),
        "publishers": set(),
        "strong": set(),
        "sections": Counter(),
        "regions": set(),
        "language": None,
    }


def add_original(acc: dict, obs: dict, strong_authority: float) -> dict:
    """Count an original once (by article id): its publisher, strong publisher, section and region."""
    if obs["article_id"] in acc["articles"]:
        return acc
    acc["articles"].add(obs["article_id"])
    acc["publishers"].add(obs["publisher_id"])
    if is_strong(obs["authority"], strong_authority):
        acc["strong"].add(obs["publisher_id"])
    if obs["section"]:
        acc["sections"][obs["section"]] += 1
    acc["regions"].add(obs["region"])
    acc["language"] = acc["language"] or obs["language"]
    return acc


def merge_counts(accs) -> dict:
    out = new_counts()
    for a in accs:
        for k in ("articles", "publishers", "strong", "regions"):
            out[k] |= a[k]
        out["sections"].update(a["sections"])
        out["language"] = out["language"] or a["language"]
    return out


def counts_output(acc: dict) -> dict:
    """Originals, publishers, strong publishers, topic (the most common section), regions and language."""
    topic = None
    if acc["sections"]:
        topic = sorted(acc["sections"].items(), key=lambda t: (-t[1], t[0]))[0][0]
    return {
        "originals": len(acc["articles"]),
        "publishers": sorted(acc["publishers"]),
        "strong_publishers": len(acc["strong"]),
        "topic": topic,
        "regions": sorted(acc["regions"]),
        "language": acc["language"],
    }


def judge_window(kind: str, story_id, c: dict, window_end: int, p: BurstParams) -> dict | None:
    """The pulse of a window's counts when the Breaking (5-min) or developing (30-min) rule holds, else None."""
    if kind == "breaking":
        ok, pv = judge_breaking(c["originals"], c["strong_publishers"], c["topic"], p)
    else:
        ok, pv = judge_developing(c["originals"], len(c["publishers"]), c["topic"], p)
    if not ok:
        return None
    return {
        "type": "pulse",
        "id": f"pulse|{kind}|{story_id}|{window_end}",
        "kind": kind,
        "story_id": int(story_id),
        "language": c["language"],
        "window_end": window_end,
        "at": window_end - 1,
        "originals": c["originals"],
        "publishers": c["publishers"],
        "strong_publishers": c["strong_publishers"],
        "topic": c["topic"],
        "regions": c["regions"],
        "p_value": pv,
    }


# ------------------------------------------------------------------------------------------------ burst polls
def burst_fetch_requests(pulse: dict, registry, p: BurstParams, memory=None) -> list[dict]:
    """FetchRequest records (kind BURST, one per publisher) for a breaking pulse: the publishers of
    :func:`~transforms.editions.bursts.coverage.pull_publishers` (at most ``fetch_max_publishers``, best first), each
    asked to poll at the 1-minute floor until ``fetch_ttl_min`` after the window end. Ids are deterministic
    (replays dedupe)."""
    out = []
    end = pulse["window_end"]
    for pub, why in pull_publishers(pulse, memory, registry, p.fetch_max_publishers):
        rid = hashlib.sha256(f"burst|{pulse['story_id']}|{end}|{pub}".encode()).hexdigest()[:32]
        out.append(
            {
                "request_id": rid,
                "kind": "BURST",
                "publisher_id": pub,
                "priority": p.fetch_priority,
                "reason": f"burst story {pulse['story_id']}: {pulse['originals']} originals in {p.window_min} min"
                f" ({REASONS[why]})",
                "requested_at": end,
                "expires_at": end + p.fetch_ttl_min * MINUTE_MS,
            }
        )
    return out


def due_polls(waiting: list[dict], now: int, prev: dict, registry, p: BurstParams, memory=None):
    """Waiting breaking pulses at event time ``now`` -> (fetch requests of the due ones, in window order, at most
    one pulse per story per ``fetch_repeat_min``; ``prev`` updated: story -> window end of the last pulse that
    asked; pulses still to wait). ``prev`` forgets stories whose last ask is older than ``fetch_repeat_min``."""
    waiting = sorted(waiting, key=lambda pl: (pl["window_end"], pl["id"]))
    requests = []
    for pulse in (pl for pl in waiting if pl["window_end"] <= now):
        end, sid = pulse["window_end"], int(pulse["story_id"])
        if sid in prev and end - prev[sid] < p.fetch_repeat_min * MINUTE_MS:
            continue
        prev[sid] = end
        requests += burst_fetch_requests(pulse, registry, p, memory)
    for sid in [s for s, end in prev.items() if now - end >= p.fetch_repeat_min * MINUTE_MS]:
        del prev[sid]
    return requests, prev, [pl for pl in waiting if pl["window_end"] > now]
