"""Bursts: windowed counts of originals and publishers per story, the Breaking rule, and burst poll requests.

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

Burst polls: the earliest breaking window of a story (then at most one every ``fetch_repeat_min``) asks the ingest
job to poll, at raised priority, the feeds of the publishers that match the story: same language and either
authoritative tier, an international wire, or a region among the bursting publishers' regions.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from typing import Any

import apache_beam as beam
from apache_beam.coders import PickleCoder, VarIntCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms import trigger, window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.typehints import KV

from transforms.editions.config import default_config
from transforms.editions.params import MINUTE_MS, BurstParams
from transforms.publishers import UNKNOWN_AUTHORITY, default_registry
from transforms.timers import arm, arm_earliest, to_ms


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


def judge_breaking(originals: int, strong_publishers: int, topic: str | None, p: BurstParams) -> tuple[bool, float]:
    pv = poisson_tail(originals, p.baseline(topic, p.window_min))
    ok = originals >= p.min_originals and strong_publishers >= p.min_strong_publishers and pv < p.max_p_value
    return ok, pv


def judge_developing(originals: int, publishers: int, topic: str | None, p: BurstParams) -> tuple[bool, float]:
    pv = poisson_tail(originals, p.baseline(topic, p.velocity_window_min))
    ok = originals >= p.developing_min_originals and publishers >= 3 and pv < p.developing_max_p_value
    return ok, pv


# ------------------------------------------------------------------------------------------------------- Beam
def originals_of(change: dict, registry, label_map: dict):
    """(story_id, observation) for an original's placement; nothing for copies and other change kinds."""
    if change.get("kind") not in ("NEW_STORY", "ASSIGN") or change.get("is_copy"):
        return
    art = change.get("article")
    if not art or art.get("copy_of"):
        return
    section = None
    for lab in [art.get("section")] + list(art.get("topics") or ()):
        if lab and lab.lower() in label_map:
            section = label_map[lab.lower()]
            break
    pub = registry.get(art.get("publisher_id") or "")
    authority = pub.authority_for(section) if pub else UNKNOWN_AUTHORITY
    region = pub.region if pub else ""
    fs = int(art.get("first_seen_at") or change["at"])
    obs = {
        "article_id": art["article_id"],
        "publisher_id": art.get("publisher_id") or "unknown",
        "authority": float(authority),
        "region": region,
        "section": section,
        "language": change["language"],
    }
    yield beam.window.TimestampedValue((int(change["story_id"]), obs), fs / 1000.0)


class ExtractOriginalsFn(beam.DoFn):
    """Originals of story changes, stamped with their first-seen time. Unreadable changes are counted and skipped
    here (RankEditions dead-letters them: one dead letter per change, not one per stage)."""

    def __init__(self, registry, label_map: dict):
        self.registry, self.label_map = registry, label_map
        self.bad = Metrics.counter("bursts", "changes_malformed")

    def process(self, change):
        try:
            yield from originals_of(change, self.registry, self.label_map)
        except (KeyError, TypeError, ValueError, AttributeError):
            self.bad.inc()


class BurstCountFn(beam.CombineFn):
    """Originals (distinct articles), publishers and strong publishers of one story in one window."""

    def __init__(self, strong_authority: float):
        self.strong = strong_authority

    def create_accumulator(self):
        return {
            "articles": set(),
            "publishers": set(),
            "strong": set(),
            "sections": Counter(),
            "regions": set(),
            "language": None,
        }

    def add_input(self, acc, obs):
        if obs["article_id"] in acc["articles"]:
            return acc
        acc["articles"].add(obs["article_id"])
        acc["publishers"].add(obs["publisher_id"])
        if obs["authority"] > self.strong:
            acc["strong"].add(obs["publisher_id"])
        if obs["section"]:
            acc["sections"][obs["section"]] += 1
        acc["regions"].add(obs["region"])
        acc["language"] = acc["language"] or obs["language"]
        return acc

    def merge_accumulators(self, accs):
        out = self.create_accumulator()
        for a in accs:
            out["articles"] |= a["articles"]
            out["publishers"] |= a["publishers"]
            out["strong"] |= a["strong"]
            out["sections"].update(a["sections"])
            out["regions"] |= a["regions"]
            out["language"] = out["language"] or a["language"]
        return out

    def extract_output(self, acc):
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


class JudgeWindowFn(beam.DoFn):
    """Apply the Breaking (5-min) or developing (30-min) rule to a window's counts; emit a pulse when it holds."""

    def __init__(self, kind: str, params: BurstParams):
        self.kind = kind
        self.params = params
        self.judged = Metrics.counter("bursts", f"{kind}_windows")
        self.fired = Metrics.counter("bursts", f"{kind}_pulses")

    def process(self, element, win=beam.DoFn.WindowParam):
        story_id, c = element
        self.judged.inc()
        if self.kind == "breaking":
            ok, pv = judge_breaking(c["originals"], c["strong_publishers"], c["topic"], self.params)
        else:
            ok, pv = judge_developing(c["originals"], len(c["publishers"]), c["topic"], self.params)
        if not ok:
            return
        self.fired.inc()
        end = int(round(float(win.end) * 1000))
        yield {
            "type": "pulse",
            "id": f"pulse|{self.kind}|{story_id}|{end}",
            "kind": self.kind,
            "story_id": int(story_id),
            "language": c["language"],
            "window_end": end,
            "at": end - 1,
            "originals": c["originals"],
            "publishers": c["publishers"],
            "strong_publishers": c["strong_publishers"],
            "topic": c["topic"],
            "regions": c["regions"],
            "p_value": pv,
        }


def matching_sources(registry, language: str, regions: list[str], publishers: list[str]) -> list[str]:
    out = []
    for pub in registry:
        if pub.language != language:
            continue
        if pub.tier == "authoritative" or pub.is_wire or pub.region in regions or pub.publisher_id in publishers:
            out.append(pub.publisher_id)
    return sorted(out)


def burst_fetch_requests(pulse: dict, registry, p: BurstParams) -> list[dict]:
    """FetchRequest records (kind BURST) for a breaking pulse; ids are deterministic (replays dedupe)."""
    out = []
    end = pulse["window_end"]
    for pub in matching_sources(registry, pulse["language"], pulse["regions"], pulse["publishers"]):
        rid = hashlib.sha256(f"burst|{pulse['story_id']}|{end}|{pub}".encode()).hexdigest()[:32]
        out.append(
            {
                "request_id": rid,
                "kind": "BURST",
                "publisher_id": pub,
                "priority": p.fetch_priority,
                "reason": f"burst story {pulse['story_id']}: {pulse['originals']} originals in {p.window_min} min",
                "requested_at": end,
                "expires_at": end + p.fetch_ttl_min * MINUTE_MS,
            }
        )
    return out


class RequestPollsFn(beam.DoFn):
    """Keyed by story: turn its earliest breaking window (then one per ``fetch_repeat_min``) into fetch requests.

    Pulses wait in PULSES until the watermark passes their window end (CYCLE, event time), then are taken in
    window order: streaming and batch (where windows arrive in any order) request the same polls.
    State: PULSES (bag), LAST_REQUEST (window end of the last pulse that asked for polls), NEXT (timer time).
    """

    PULSES = BagStateSpec("pulses", PickleCoder())
    LAST_REQUEST = ReadModifyWriteStateSpec("last_request", VarIntCoder())
    NEXT = ReadModifyWriteStateSpec("next", VarIntCoder())
    CYCLE = TimerSpec("cycle", TimeDomain.WATERMARK)

    def __init__(self, params: BurstParams, publishers_path: str | None = None):
        self.params = params
        self.publishers_path = publishers_path
        self.requests = Metrics.counter("bursts", "fetch_requests")

    def setup(self):
        self.registry = default_registry(self.publishers_path)

    def process(
        self,
        element,
        pulses=beam.DoFn.StateParam(PULSES),
        nxt=beam.DoFn.StateParam(NEXT),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        _, pulse = element
        pulses.add(pulse)
        arm_earliest(timer, nxt, int(pulse["window_end"]))

    @on_timer(CYCLE)
    def on_cycle(
        self,
        ts=beam.DoFn.TimestampParam,
        pulses=beam.DoFn.StateParam(PULSES),
        last=beam.DoFn.StateParam(LAST_REQUEST),
        nxt=beam.DoFn.StateParam(NEXT),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        now = to_ms(ts)
        waiting = sorted(pulses.read(), key=lambda pl: (pl["window_end"], pl["id"]))
        due = [pl for pl in waiting if pl["window_end"] <= now]
        later = [pl for pl in waiting if pl["window_end"] > now]
        prev = last.read()
        for pulse in due:
            end = pulse["window_end"]
            if prev is not None and end - prev < self.params.fetch_repeat_min * MINUTE_MS:
                continue
            prev = end
            for req in burst_fetch_requests(pulse, self.registry, self.params):
                self.requests.inc()
                yield req
        if prev is not None:
            last.write(prev)
        pulses.clear()
        for pl in later:
            pulses.add(pl)
        arm(timer, nxt, later[0]["window_end"] if later else None)


class DetectBursts(beam.PTransform):
    """StoryChange records -> ``{"pulses": burst pulses, "fetch_requests": FetchRequest records}``.

    Args:
        editions_path: editions file (default: the packaged one) -- burst parameters and section labels.
        publishers_path: publisher registry (default: the packaged one) -- authority, region, language.
        params: override the file's burst parameters (tests).
    """

    def __init__(self, editions_path: str | None = None, publishers_path: str | None = None, params=None):
        super().__init__()
        self.editions_path = editions_path
        self.publishers_path = publishers_path
        self.params = params

    def expand(self, changes):
        config = default_config(self.editions_path)
        p = self.params or BurstParams.from_config(config)
        registry = default_registry(self.publishers_path)
        label_map = {k: v for k, v in config.label_sections().items() if v != "top"}
        lateness = p.allowed_lateness_s
        originals = changes | "ExtractOriginals" >> beam.ParDo(ExtractOriginalsFn(registry, label_map))

        def windowed(size_min: int):
            return beam.WindowInto(
                window.SlidingWindows(size_min * 60, p.period_min * 60),
                trigger=trigger.AfterWatermark(late=trigger.AfterCount(1)),
                accumulation_mode=trigger.AccumulationMode.ACCUMULATING,
                allowed_lateness=lateness,
            )

        breaking = (
            originals
            | "SlidingFiveMinutes" >> windowed(p.window_min)
            | "CountFiveMinutes" >> beam.CombinePerKey(BurstCountFn(p.strong_authority))
            | "JudgeBreaking" >> beam.ParDo(JudgeWindowFn("breaking", p))
        )
        developing = (
            originals
            | "SlidingThirtyMinutes" >> windowed(p.velocity_window_min)
            | "CountThirtyMinutes" >> beam.CombinePerKey(BurstCountFn(p.strong_authority))
            | "JudgeDeveloping" >> beam.ParDo(JudgeWindowFn("developing", p))
        )
        breaking = breaking | "BreakingToGlobalWindow" >> beam.WindowInto(window.GlobalWindows())
        developing = developing | "DevelopingToGlobalWindow" >> beam.WindowInto(window.GlobalWindows())
        pulses = (breaking, developing) | "FlattenPulses" >> beam.Flatten()
        fetch_requests = (
            breaking
            | "KeyPulseByStory" >> beam.Map(lambda pl: (pl["story_id"], pl)).with_output_types(KV[int, Any])
            | "RequestBurstPolls" >> beam.ParDo(RequestPollsFn(p, self.publishers_path))
        )
        return {"pulses": pulses, "fetch_requests": fetch_requests}
