"""Ranking and burst parameters, read from the ``ranking`` and ``bursts`` blocks of the editions file.

Reads an :class:`~transforms.editions.vocabulary.config.EditionsConfig`; writes nothing. Defaults are DESIGN.md's numbers
(section 5): coverage over 6 h, velocity over 30 min, freshness halving every 4 h, smoothing over 5 cycles,
10 % hysteresis, top-10 diversity (3 per section, 2 per publisher), centroid cosine 0.85, Breaking pinned 2 h,
near-ties within 5 %, publisher share cap 10 %/day, 4 supporting links, Breaking at >= 10 originals in 5 min
from >= 5 publishers with authority > 0.5 and a Poisson tail < 1e-6.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from transforms.common import HOUR_MS, MINUTE_MS
from transforms.editions.vocabulary.config import EditionsConfig

# A "strong" publisher's authority floor: the Breaking rule's (bursts.is_strong) and the top-stories corroboration's
# (trust.py) -- one number, so both rules mean the same by "an authoritative source".
STRONG_AUTHORITY = 0.5


@dataclass(frozen=True)
class RepresentativeParams:
    w_centrality: float = 1.0
    w_authority: float = 1.0
    w_freshness: float = 0.5
    w_headline: float = 1.0
    first_report_boost: float = 0.15
    local_boost: float = 0.2
    copy_penalty: float = 0.3
    opinion_penalty: float = 0.2
    near_tie: float = 0.05
    publisher_share_cap: float = 0.10
    share_cap_min_impressions: int = 200


@dataclass(frozen=True)
class SupportingParams:
    count: int = 4
    mmr_lambda: float = 0.7
    candidates: int = 12
    max_wire_copies: int = 1


@dataclass(frozen=True)
class RankParams:
    page_size: int = 30
    pool_size: int = 1000
    # Beyond the national pool, per city of the region: its best stories local to it (scoring.py local_reserve);
    # 100 = the largest page GET /v1/topics/{id} serves (schemas.pages.MAX_LIMIT), so a city page is never short.
    local_candidates: int = 100
    section_candidates: int = 60
    coverage_window_h: float = 6
    coverage_tail_weight: float = 0.1
    velocity_window_min: float = 30
    velocity_weight: float = 0.25
    velocity_min: float = 0.75
    velocity_max: float = 2.5
    freshness_half_life_h: float = 4
    live_window_h: float = 48
    smoothing_cycles: int = 5
    hysteresis: float = 0.10
    top_n: int = 10
    max_per_section_in_top: int = 3
    max_per_publisher_in_top: int = 2
    max_centroid_cosine: float = 0.85
    breaking_pin_h: float = 2
    max_pins: int = 2
    breaking_relevance: float = 0.5
    section_share_min: float = 0.3
    nation_share_min: float = 0.5
    local_share_min: float = 0.25
    world_share_max: float = 0.3
    idle_cycles: int = 30
    clickbait_authority: float = 0.3  # clickbait stories of publishers all below it leave top stories (headlines.py)
    # trust gates (trust.py): top stories need 2 independent strong voices; fast stories of only low-trust sources
    # (>= 5 originals in 30 min, velocity >= 1.5, every authority < 0.3) are held; developing = facts changed < 1 h
    corroboration_publishers: int = 2
    corroboration_authority: float = STRONG_AUTHORITY
    hold_min_originals: int = 5
    hold_velocity: float = 1.5
    low_trust_authority: float = 0.3
    developing_window_min: float = 60
    representative: RepresentativeParams = field(default_factory=RepresentativeParams)
    supporting: SupportingParams = field(default_factory=SupportingParams)

    @property
    def coverage_window_ms(self) -> int:
        return int(self.coverage_window_h * HOUR_MS)

    @property
    def velocity_window_ms(self) -> int:
        return int(self.velocity_window_min * MINUTE_MS)

    @property
    def half_life_ms(self) -> float:
        return self.freshness_half_life_h * HOUR_MS

    @property
    def live_window_ms(self) -> int:
        return int(self.live_window_h * HOUR_MS)

    @property
    def breaking_pin_ms(self) -> int:
        return int(self.breaking_pin_h * HOUR_MS)

    @classmethod
    def from_config(cls, config: EditionsConfig, **overrides) -> RankParams:
        raw = dict(config.ranking)
        raw.update(overrides)
        rep = RepresentativeParams(**_known(RepresentativeParams, raw.pop("representative", {})))
        sup = SupportingParams(**_known(SupportingParams, raw.pop("supporting", {})))
        return cls(representative=rep, supporting=sup, **_known(cls, raw))


@dataclass(frozen=True)
class BurstParams:
    window_min: int = 5
    period_min: int = 1
    min_originals: int = 10
    min_strong_publishers: int = 5
    strong_authority: float = STRONG_AUTHORITY
    max_p_value: float = 1e-6
    baseline_per_5min: dict = field(default_factory=lambda: {"default": 0.8})
    velocity_window_min: int = 30
    developing_min_originals: int = 5
    developing_max_p_value: float = 1e-3
    allowed_lateness_s: int = 600
    fetch_priority: int = 2
    fetch_ttl_min: int = 60  # a pulled feed polls at the 1-minute floor this long after the window end
    fetch_repeat_min: int = 30  # a story asks again at most this often (each ask extends the hour)
    fetch_max_publishers: int = 50  # publishers pulled per pulse (transforms/editions/bursts/coverage.py: the order)

    def baseline(self, section: str | None, minutes: float = 5.0) -> float:
        """Expected originals of a new story of that topic in ``minutes``."""
        per5 = self.baseline_per_5min.get(section or "default", self.baseline_per_5min.get("default", 0.8))
        return float(per5) * minutes / 5.0

    @classmethod
    def from_config(cls, config: EditionsConfig, **overrides) -> BurstParams:
        raw = dict(config.bursts)
        raw.update(overrides)
        return cls(**_known(cls, raw))

    def __hash__(self) -> int:
        return id(self)


def _known(cls, raw: dict) -> dict:
    names = {f.name for f in fields(cls)} - {"representative", "supporting"}
    unknown = sorted(set(raw) - names)
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown parameter(s) {', '.join(unknown)} in the editions file")
    return {k: v for k, v in raw.items() if k in names}
