"""Co-visitation counts, plain Python (no Beam): which stories readers read together, decayed, bounded per story.

Two steps, each a pure function over a small state, so the Beam stage (transforms/covisit/beam.py), the tests and
any batch replay agree on one definition:

1. Per reader (:class:`ReaderState`, :func:`reader_step`): a READ or CLICK of story S at time t pairs S with every
   *other* story the reader read within ``window_ms`` (default 6 h) of t, both directions, one increment each
   (weight 1, at the later of the two reads). A story re-read inside the window pairs nothing new (a pair counts
   once per reader and window). Each read pairs with at most ``max_pairs`` (20) of the reader's nearest reads.
   - Idempotent by ``event_id``: an event id already seen in the window changes nothing (replays, redeliveries).
     Events older than the reader's newest read minus the window are too late to pair and are ignored, so a replay
     past the window cannot count twice either.
   - Abnormal readers: more than ``max_per_hour`` (120) reads in the hour before a read marks the reader abnormal
     until a whole window passes without reads at that rate; an abnormal reader's reads pair nothing (bots,
     crawlers, scripted clients). What it paired before it crossed the bar is bounded by ``max_pairs`` per read.
   - Impressions and events without a story id pair nothing.
2. Per story (:class:`Neighbours`): the pair increments of one story fold into decayed counts per neighbour
   (half-life ``half_life_ms``, default 24 h; counts are held as of ``ref_at``, the newest increment time, and an
   out-of-order increment is decayed to it), then bounded: only the ``top_k`` (50) largest are kept (ties: the
   smaller neighbour id), and counts under ``MIN_COUNT`` are dropped. The state holds up to ``2 * top_k`` between
   cuts, so a new neighbour has room to grow instead of being cut on arrival by the incumbents. The bounded list is what the store holds
   (stores/covisit.py); readers decay it to their own clock with :func:`decayed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from transforms.common import HOUR_MS

WINDOW_MS = 6 * HOUR_MS
HALF_LIFE_MS = 24 * HOUR_MS
TOP_K = 50
MAX_PER_HOUR = 120
MAX_PAIRS = 20
MIN_COUNT = 1e-3
READ_KINDS = ("READ", "CLICK")


@dataclass(frozen=True)
class Params:
    window_ms: int = WINDOW_MS
    half_life_ms: int = HALF_LIFE_MS
    top_k: int = TOP_K
    max_per_hour: int = MAX_PER_HOUR
    max_pairs: int = MAX_PAIRS

    def __post_init__(self):
        for name in ("window_ms", "half_life_ms", "top_k", "max_per_hour", "max_pairs"):
            if not getattr(self, name) > 0:
                raise ValueError(f"co-visitation {name} must be > 0, got {getattr(self, name)}")


@dataclass(frozen=True)
class Increment:
    """One "read together" observation: ``story`` was read with ``neighbour`` at ``at`` (ms)."""

    story: int
    neighbour: int
    at: int
    weight: float = 1.0


@dataclass
class ReaderState:
    """A reader's recent reads ``[(at, story_id, event_id)]`` sorted by time, the event ids seen in the window and,
    while the reader is abnormal, the time until which its reads are ignored."""

    reads: list = field(default_factory=list)
    seen: dict = field(default_factory=dict)  # event_id -> at
    newest: int = 0
    blocked_until: int = 0

    def empty(self) -> bool:
        return not self.reads and not self.seen and not self.blocked_until


def _prune(state: ReaderState, params: Params) -> None:
    """Forget what is older than the window; keep at most the reads a reader under the rate bar could make in a
    window (an abnormal reader's state stays bounded too)."""
    floor = state.newest - params.window_ms
    cap = params.max_per_hour * max(1, -(-params.window_ms // HOUR_MS)) + 1
    state.reads = [r for r in state.reads if r[0] >= floor][-cap:]
    if len(state.seen) > cap or any(at < floor for at in state.seen.values()):
        kept = sorted(((at, e) for e, at in state.seen.items() if at >= floor))[-cap:]
        state.seen = {e: at for at, e in kept}


def reader_step(state: ReaderState, event: dict, params: Params = Params()) -> tuple[list[Increment], str]:
    """Apply one ReadEvent to the reader's state. Returns the pair increments and what happened (for counters):
    ``paired``, ``not_a_read``, ``duplicate``, ``late``, ``reread``, ``abnormal``."""
    sid = event.get("story_id")
    if event.get("kind") not in READ_KINDS or sid is None:
        return [], "not_a_read"
    at, eid, sid = int(event["at"]), str(event["event_id"]), int(sid)
    if eid in state.seen:
        return [], "duplicate"
    if at < state.newest - params.window_ms:
        return [], "late"
    state.seen[eid] = at
    state.newest = max(state.newest, at)
    others = [r for r in state.reads if abs(r[0] - at) <= params.window_ms]
    reread = any(r[1] == sid for r in others)
    state.reads.append((at, sid, eid))
    state.reads.sort()
    _prune(state, params)
    last_hour = sum(1 for r in state.reads if at - HOUR_MS < r[0] <= at)
    if last_hour > params.max_per_hour:
        state.blocked_until = max(state.blocked_until, at + params.window_ms)
    if at < state.blocked_until:
        return [], "abnormal"
    state.blocked_until = 0
    if reread:
        return [], "reread"
    nearest = sorted(others, key=lambda r: (abs(r[0] - at), r[1]))[: params.max_pairs]
    out = []
    for other_at, other, _ in nearest:
        if other == sid:
            continue
        when = max(at, other_at)
        out += [Increment(sid, other, when), Increment(other, sid, when)]
    return out, "paired"


def decayed(count: float, at: int, now: int, half_life_ms: int = HALF_LIFE_MS) -> float:
    """``count`` (as of ``at``) decayed to ``now``; never grows for a ``now`` before ``at``."""
    return count * 0.5 ** (max(0, now - at) / half_life_ms)


@dataclass
class Neighbours:
    """One story's decayed co-visitation counts ``{neighbour: count as of ref_at}``, bounded to ``top_k``."""

    counts: dict = field(default_factory=dict)
    ref_at: int = 0

    def add(self, inc: Increment, params: Params = Params()) -> None:
        if inc.at > self.ref_at:
            if self.counts:
                factor = 0.5 ** ((inc.at - self.ref_at) / params.half_life_ms)
                self.counts = {n: c * factor for n, c in self.counts.items()}
            self.ref_at = inc.at
        w = inc.weight * 0.5 ** ((self.ref_at - inc.at) / params.half_life_ms)
        self.counts[inc.neighbour] = self.counts.get(inc.neighbour, 0.0) + w
        if len(self.counts) > 2 * params.top_k:  # room for newcomers to grow before the next cut
            self.bound(params)

    def bound(self, params: Params = Params()) -> None:
        """Keep the ``top_k`` largest counts at or above MIN_COUNT (ties: the smaller id)."""
        kept = sorted(((n, c) for n, c in self.counts.items() if c >= MIN_COUNT), key=lambda nc: (-nc[1], nc[0]))
        self.counts = dict(kept[: params.top_k])

    def top(self, params: Params = Params()) -> list[tuple[int, float]]:
        """The bounded list, largest first: what the store holds for the story (counts as of ``ref_at``)."""
        self.bound(params)
        return [(n, round(c, 6)) for n, c in self.counts.items()]


def fold(events, params: Params = Params()) -> dict[int, Neighbours]:
    """The whole computation over a batch of ReadEvents, in ``at`` order per reader (tests, small replays)."""
    readers: dict[str, ReaderState] = {}
    stories: dict[int, Neighbours] = {}
    for e in sorted(events, key=lambda e: (int(e["at"]), str(e["event_id"]))):
        state = readers.setdefault(str(e["reader_id"]), ReaderState())
        for inc in reader_step(state, e, params)[0]:
            stories.setdefault(inc.story, Neighbours()).add(inc, params)
    for n in stories.values():
        n.bound(params)
    return stories
