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
   - Arrival time, not the client's clock, judges a reader: the origin accepts an event's ``at`` up to 30 days
     back, so ``at`` alone lets one client spread a burst over a month. Each event's arrival is its
     ``received_at`` (ms): the origin's clock when it published the read (serving/personal/readers.py, a message attribute
     the Beam stage copies onto the event), at most a fold interval (1 s, plus retries) after the request came in;
     without it, the Beam element timestamp (Pub/Sub publish time), else ``at`` (replays of old data, tests).
   - Abnormal readers: more than ``max_per_hour`` (120) reads *arriving* in the hour before a read marks the reader
     abnormal until a whole window of arrival passes without reads at that rate; an abnormal reader's reads pair
     nothing (bots, crawlers, scripted clients, 30,000 backdated reads posted in ten minutes). The rate counts every
     read that arrives, late ones too. What it paired before it crossed the bar is bounded by ``max_pairs`` per read.
   - Per-reader contribution cap: a reader adds a pair (either direction) at most once per ``window_ms`` of
     arrival, so a client walking a pair through windows of its own ``at`` scores no more than a reader who read
     the pair once (``capped`` when every pair of a read was capped). A reader really coming back to the pair a
     window later counts again, as before. The pairs' times (and so their decay) stay the reads' ``at``.
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
    """A reader's recent reads ``[(at, story_id, event_id)]`` sorted by time, the event ids seen in the window,
    the arrival times of its reads in the last hour of arrival (at most ``max_per_hour + 1``), the pairs it added
    within the last window of arrival ``{(lo, hi): arrival}`` and, while the reader is abnormal, the arrival time
    until which its reads are ignored."""

    reads: list = field(default_factory=list)
    seen: dict = field(default_factory=dict)  # event_id -> at
    newest: int = 0
    blocked_until: int = 0  # arrival time
    arrivals: list = field(default_factory=list)
    pairs: dict = field(default_factory=dict)

    def empty(self) -> bool:
        return not self.reads and not self.seen and not self.blocked_until


def arrival_of(event: dict, fallback: int | None = None) -> int:
    """When the event reached us (ms): its ``received_at``, else ``fallback`` (the element timestamp), else ``at``."""
    got = event.get("received_at")
    if got is not None:
        return int(got)
    return int(event["at"]) if fallback is None else int(fallback)


def _over_rate(state: ReaderState, arrived: int, params: Params) -> bool:
    """Records the arrival; True while the reader is abnormal (over ``max_per_hour`` arrivals in an hour)."""
    if not hasattr(state, "arrivals"):  # a state pickled before arrivals were kept
        state.arrivals, state.pairs = [], {}
    arrivals = state.arrivals
    arrivals.append(arrived)
    if len(arrivals) > 1 and arrivals[-2] > arrived:
        arrivals.sort()
    floor = arrivals[-1] - HOUR_MS
    keep = [a for a in arrivals[-(params.max_per_hour + 1) :] if a > floor]
    state.arrivals = keep
    if sum(1 for a in keep if arrived - HOUR_MS < a <= arrived) > params.max_per_hour:
        state.blocked_until = max(state.blocked_until, arrived + params.window_ms)
    return arrived < state.blocked_until


def _prune(state: ReaderState, params: Params) -> None:
    """Forget what is older than the window; keep at most the reads a reader under the rate bar could make in a
    window (an abnormal reader's state stays bounded too)."""
    floor = state.newest - params.window_ms
    cap = params.max_per_hour * max(1, -(-params.window_ms // HOUR_MS)) + 1
    state.reads = [r for r in state.reads if r[0] >= floor][-cap:]
    if len(state.seen) > cap or any(at < floor for at in state.seen.values()):
        kept = sorted(((at, e) for e, at in state.seen.items() if at >= floor))[-cap:]
        state.seen = {e: at for at, e in kept}


def reader_step(
    state: ReaderState, event: dict, params: Params = Params(), arrived: int | None = None
) -> tuple[list[Increment], str]:
    """Apply one ReadEvent to the reader's state. Returns the pair increments and what happened (for counters):
    ``paired``, ``not_a_read``, ``duplicate``, ``late``, ``reread``, ``abnormal``, ``capped``. ``arrived``: the
    element timestamp (ms), used when the event carries no ``received_at``."""
    sid = event.get("story_id")
    if event.get("kind") not in READ_KINDS or sid is None:
        return [], "not_a_read"
    at, eid, sid = int(event["at"]), str(event["event_id"]), int(sid)
    if eid in state.seen:
        return [], "duplicate"
    arrived = arrival_of(event, arrived)
    if _over_rate(state, arrived, params):
        return [], "abnormal"  # nothing of it is kept: the reader's state stays as it was when it crossed the bar
    if at < state.newest - params.window_ms:
        return [], "late"
    state.seen[eid] = at
    state.newest = max(state.newest, at)
    others = [r for r in state.reads if abs(r[0] - at) <= params.window_ms]
    reread = any(r[1] == sid for r in others)
    state.reads.append((at, sid, eid))
    if len(state.reads) > 1 and state.reads[-2] > state.reads[-1]:
        state.reads.sort()
    _prune(state, params)
    state.blocked_until = 0
    if reread:
        return [], "reread"
    nearest = sorted(others, key=lambda r: (abs(r[0] - at), r[1]))[: params.max_pairs]
    out, capped = [], False
    for other_at, other, _ in nearest:
        if other == sid:
            continue
        key = (min(sid, other), max(sid, other))
        if arrived - state.pairs.get(key, arrived - params.window_ms) < params.window_ms:
            capped = True  # this reader added the pair within the last window of arrival
            continue
        state.pairs.pop(key, None)
        state.pairs[key] = arrived  # re-inserted last: the dict stays in (about) arrival order for _forget_pairs
        when = max(at, other_at)
        out += [Increment(sid, other, when), Increment(other, sid, when)]
    _forget_pairs(state, arrived, params)
    return out, "capped" if capped and not out else "paired"


def _forget_pairs(state: ReaderState, arrived: int, params: Params) -> None:
    """Drop the pairs added a window of arrival ago or more (oldest first, O(1) a read amortised), and keep at most
    what a reader under the rate bar adds in a window (``max_per_hour`` x window hours x ``max_pairs``)."""
    pairs = state.pairs
    limit = params.max_per_hour * max(1, -(-params.window_ms // HOUR_MS)) * params.max_pairs
    while pairs:
        first = next(iter(pairs))
        if arrived - pairs[first] < params.window_ms and len(pairs) <= limit:
            break
        del pairs[first]


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

    def rename(self, alias, own: int | None = None) -> None:
        """Counts of absorbed ids (``alias``: absorbed -> survivor, one hop) added to their survivors'; a survivor
        that is ``own`` (the story itself) is dropped: a story is not its own neighbour."""
        for n in [n for n in self.counts if n in alias]:
            count, survivor = self.counts.pop(n), alias[n]
            if survivor != own:
                self.counts[survivor] = self.counts.get(survivor, 0.0) + count

    def inherit(self, items, at: int, params: Params = Params()) -> None:
        """Another list's counts (``[(neighbour, count as of at)]``: a merged-away story's) added to these, both
        decayed to the later of the two times."""
        if at > self.ref_at:
            factor = 0.5 ** ((at - self.ref_at) / params.half_life_ms)
            self.counts = {n: c * factor for n, c in self.counts.items()}
            self.ref_at = at
        w = 0.5 ** ((self.ref_at - at) / params.half_life_ms)
        for n, c in items:
            self.counts[int(n)] = self.counts.get(int(n), 0.0) + float(c) * w

    def bound(self, params: Params = Params()) -> None:
        """Keep the ``top_k`` largest counts at or above MIN_COUNT (ties: the smaller id)."""
        kept = sorted(((n, c) for n, c in self.counts.items() if c >= MIN_COUNT), key=lambda nc: (-nc[1], nc[0]))
        self.counts = dict(kept[: params.top_k])

    def top(self, params: Params = Params()) -> list[tuple[int, float]]:
        """The bounded list, largest first: what the store holds for the story (counts as of ``ref_at``)."""
        self.bound(params)
        return [(n, round(c, 6)) for n, c in self.counts.items()]


def fold(events, params: Params = Params()) -> dict[int, Neighbours]:
    """The whole computation over a batch of ReadEvents, in arrival order per reader (tests, small replays)."""
    readers: dict[str, ReaderState] = {}
    stories: dict[int, Neighbours] = {}
    for e in sorted(events, key=lambda e: (arrival_of(e), int(e["at"]), str(e["event_id"]))):
        state = readers.setdefault(str(e["reader_id"]), ReaderState())
        for inc in reader_step(state, e, params)[0]:
            stories.setdefault(inc.story, Neighbours()).add(inc, params)
    for n in stories.values():
        n.bound(params)
    return stories
