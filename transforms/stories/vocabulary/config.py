"""The story writer's calibration: :class:`ClusterConfig` and the time constants its thresholds are expressed in.

Thresholds are on the score scale of :mod:`transforms.stories.writer.scoring`; docs/stories.md says why each number is
what it is and how benchmarks/stories_calibrate.py reproduces them.
"""

from __future__ import annotations

from dataclasses import dataclass

from transforms.common import DAY_MS, HOUR_MS, MINUTE_MS


@dataclass(frozen=True)
class ClusterConfig:
    """One calibration. Thresholds are on the score scale of :mod:`transforms.stories.writer.scoring`."""

    w_entity: float = 1.0
    w_lexical: float = 0.5
    join: float = 0.8  # article with a body
    join_headline: float = 0.45  # headline-only article
    # Repair merge bar between story profiles, before the size term: below JOIN for two single articles, above it
    # from two members on (a best-first merge is not an arrival-time join; measured in docs/stories.md).
    merge: float = 0.7
    merge_headline: float = 0.45
    merge_size_slope: float = 0.2  # the merge bar rises by this per doubling of the smaller story's size
    # Repair merge bar between two headline-only stories on their average article-pair score (average linkage, no
    # size term; see docs/stories.md). None: profile score and size term as for stories with a body.
    merge_headline_average: float | None = 0.15
    # With average linkage on (merge_headline_average not None), its pair score is the learned one
    # (transforms/stories/writer/pairscore.py): the average logit between the two stories' articles against the model's
    # headline bar; False: the hand-weighted score against merge_headline_average.
    merge_headline_learned: bool = True
    # ... and that bar raised by this much on the logit scale: the writer's stories already hold online joins (on the
    # hand-weighted score) that batch average linkage never makes, so at the model's own bar it mixes more (uci-dev
    # pairwise P 0.893 vs the reference's 0.905); docs/stories.md has the measurements.
    merge_headline_learned_margin: float = 0.35
    # How a repair tick repairs: "merge" (split of a story's two cohesive halves, then best-first merges of whole
    # stories on the profile score) or "recluster" (transforms/stories/writer/recluster.py: average linkage over the learned
    # article-pair score of the changed stories and their candidates, ids reconciled by majority of articles, then
    # the "merge" repair of what it left alone when RECLUSTER_THEN_MERGE). docs/stories.md has both measured on the
    # dev files.
    repair_mode: str = "recluster"
    # The learned pair score's file ("": the shipped transforms/stories/writer/pair_score.json). benchmarks/stories_calibrate.py
    # points it at a model fitted without the file it scores (leave-one-file-out).
    pair_score: str = ""
    recluster_max_articles: int = 400  # originals of one re-clustered component (the cost bound of a tick)
    # Logit added to a pair that shares a story now: online joins on the profile score beat batch average linkage on
    # bodies, so a member leaves its story only when the pair score is clearly against it (2.0 split ECB+ stories).
    recluster_stay_bonus: float = 6.0
    # Cut of the average linkage over the model's bar of the text kind (logit); None: that kind is not re-clustered
    # (headline-only stories: every margin tried lost uci-dev B-cubed F1 or pairwise P against the merge pass).
    recluster_margin_body: float | None = 1.0
    recluster_margin_headline: float | None = None
    # After the re-clustering, the "merge" repair (splits, best-first merges of whole stories on the profile score)
    # over the window's stories the re-clustering did not change: it beats article-pair average linkage on bodies.
    recluster_then_merge: bool = True
    # Two articles whose times are both known and more than this many hours apart never share a story: no join, no
    # merge, no re-clustered cluster spans more (None: no cut). The plain offline method (TF-IDF, average linkage) cuts at three days;
    # docs/stories.md has the measurements.
    far_apart_hours: float | None = 72.0
    # Stories whose places conflict (the average places relation of their latest members, transforms/stories/places.py,
    # at or below this: most pairs name places neither of which lies in the other) never join or merge (None: off).
    place_veto: float | None = None
    # A second opinion on joins and merges of stories with bodies (transforms/stories/writer/scoring.py): the learned
    # pair score's average logit between the article (a story's articles) and the story's latest originals must reach
    # the model's body bar plus this margin (None: no second opinion). Asked only where the evidence that names an
    # event conflicts (OPINION_PLACES, OPINION_AGES below): asked of every join it turned down 4 of the sample
    # world's 13 earthquake reports (the local system lost its Breaking story) and BASIL's reports of one event from
    # outlets that name different places. The join's margin is below the merge's: a declined join leaves a story
    # that a merge may still repair, a merge is for good. Chosen on the dev files (docs/stories.md, "Events of one
    # kind"): gva-dev's out-of-sample pairwise P 0.81 -> 0.93, no other file more than 0.01 worse.
    join_pair_margin: float | None = -1.0
    merge_pair_margin: float | None = 0.0
    # Ask those opinions where the mean places relation between the two sides (transforms/stories/vocabulary/places.py)
    # is at or below OPINION_PLACES (most pairs name places neither of which lies in the other) or the mean relation
    # of the ages their headlines state (transforms/stories/vocabulary/numbers.py) at or below OPINION_AGES (more
    # of their pairs state different ages than the same); both None: ask of every join and merge.
    opinion_places: float | None = -0.5
    opinion_ages: float | None = -0.01
    # An untimed article with a body may join an untimed story at a score up to this much below the join bar when
    # the learned pair score agrees (its average logit over the story's latest originals reaches the model's body bar
    # plus UNTIMED_RELIEF_MARGIN): the member-level evidence stands in for the time the input lacks, so a file of
    # bodies without dates does not fragment (docs/stories.md, "Inputs without time"). None: no relief.
    # Shipped: the whole unknown-time penalty (0.55) when every pair with the story's latest originals reaches the
    # model's body bar (UNTIMED_RELIEF_COMPLETE): an untimed body pays no more than a timed one where every member
    # agrees (docs/stories.md, "Leads without time": the figures of all six dev files and their CI parts).
    untimed_relief: float | None = 0.55
    untimed_relief_margin: float = 0.0
    untimed_relief_complete: bool = True  # the relief's agreement over every pair (complete linkage), not the average
    # A join or merge of stories with bodies where a time is unknown needs every article pair (the article or the
    # latest originals of one story against the other's) at the model's body bar plus this (complete linkage);
    # None: off. Without times, the items of a saga chain through a centroid (docs/stories.md).
    untimed_min_pair: float | None = None
    # The same complete linkage, only where a time is unknown and every article on both sides is a lead (a title and
    # its opening paragraph: ArticleFeatures.lead_only): AllSides' roundups, whose sagas chain through centroids, and
    # not ECB+'s full bodies, whose reports of one event have pairs below the bar. None: off. Ignored when
    # UNTIMED_MIN_PAIR is set (that one applies to every untimed body). -1.0: docs/stories.md, "Leads without time"
    # (allsides-dev out of sample 0.350 / 0.723 -> 0.60 / 0.73, pairwise P / B-cubed F1).
    untimed_lead_min_pair: float | None = -1.0
    # In that complete linkage, two leads that both name days of the week and share none never pair (a saga's items
    # told on different days; English: transforms/stories/writer/scoring.py weekdays_conflict).
    lead_weekdays: bool = True
    # In that complete linkage of a join (and in the re-clustering's, RECLUSTER_LEAD_PAIRS), two leads must share a
    # term that at most this many of the join's candidate stories hold (the nearest live centroids, their latest
    # originals): a word of their own item, not only words of the saga around it ("Kavanaugh", "Senate", "nominee").
    # 1: a word no other candidate story holds. None: off. docs/stories.md, "Leads of one saga".
    lead_item_stories: int | None = 1
    # A headline without a body counts as a lead in that complete linkage (it is shorter than one): one empty-bodied
    # member used to switch the rule off for its whole story, and AllSides' largest mixed story (17 articles, 14 items)
    # grew through one (docs/stories.md, "Leads without time: the holes").
    headlines_as_leads: bool = True
    # The re-clustering keeps the same complete linkage between two stories of untimed leads (every cross pair at the
    # body bar + UNTIMED_LEAD_MIN_PAIR), and two such stories whose leads name days of the week, none shared between
    # the two stories' days, never share a cluster (LEAD_WEEKDAYS): until then the re-clustering's average linkage
    # remade the saga chains the joins had refused.
    recluster_lead_pairs: bool = True
    split_margin: float = 0.35  # split only when the halves score this far below the merge bar
    unknown_time_penalty: float = 0.55
    time_weight: float = 0.3
    candidates: int = 10
    merge_candidates: int = 10
    merge_reach: int = 10  # nearest live stories outside the repair window that a changed story may merge with
    merge_floor: float = 0.35  # dense similarity below which two stories are never merge candidates
    expire_hours: float = 48.0
    # A time known only to the day (exactly 00:00 UTC: a date without a time of day) hides up to a day of the real
    # gap, so such a story's live span counts from the end of its day (docs/stories.md: BASIL's reports dated two
    # calendar days apart); False: from the time as given.
    date_only_slack: bool = True
    half_life_hours: float = 6.0
    repair_every_min: float = 10.0
    repair_window_hours: float = 6.0
    repair_cooldown_min: float = 30.0
    min_split_sources: int = 3
    split_max_members: int = 400
    # A story of fewer than 2 x SPLIT_SPREAD originals is checked for a split at every tick it changed; a larger one
    # (SPLIT_GROWTH None) every n // SPLIT_SPREAD ticks at most, if it changed during them, or (SPLIT_GROWTH) only at
    # the tick its originals pass a level of a geometric ladder from 2 x SPLIT_SPREAD, each SPLIT_GROWTH larger (32,
    # 40, 50, 63, ...), or its repair cooldown ends. An attempt costs O(n^2) to O(n^3) and a story of 32-400
    # originals grows 2-5 % between the spread ticks (20,000 headlines: 3,204 such attempts, 94 % of the split time,
    # none split; on the six dev files no attempt of any size splits): docs/architecture.md, the writer's throughput.
    split_spread: int = 16
    split_growth: float | None = 0.25
    idf_prior: float = 10.0
    profile_terms: int = 150
    profile_entities: int = 100

    @property
    def expire_ms(self) -> int:
        return int(self.expire_hours * HOUR_MS)

    @property
    def day_slack_ms(self) -> int:
        """Added to the live span of a story whose last time is date-only (:func:`date_only`)."""
        return DAY_MS - 1 if self.date_only_slack else 0

    def far_apart(self, a_first: int, a_last: int, b_first: int, b_last: int) -> bool:
        """Whether two timed spans of articles hold a pair more than FAR_APART_HOURS apart."""
        if self.far_apart_hours is None:
            return False
        return max(a_last, b_last) - min(a_first, b_first) > self.far_apart_hours * HOUR_MS

    @property
    def half_life_ms(self) -> float:
        return self.half_life_hours * HOUR_MS

    @property
    def repair_every_ms(self) -> int:
        return int(self.repair_every_min * MINUTE_MS)

    @property
    def repair_window_ms(self) -> int:
        return int(self.repair_window_hours * HOUR_MS)

    @property
    def repair_cooldown_ms(self) -> int:
        return int(self.repair_cooldown_min * MINUTE_MS)


def date_only(at: int) -> bool:
    """Whether a time is exactly midnight UTC: what a date without a time of day parses to (a publication date,
    a printed dateline). A crawl time lands there once in 86.4 million milliseconds, and then only lives a day more."""
    return at % DAY_MS == 0


def calibration(model: str, language: str) -> ClusterConfig:
    """The calibration of an embedding model and language: one configuration for every model and language today
    (measured on all dev sets at once, docs/stories.md); the arguments keep the place where one would differ."""
    del model, language
    return ClusterConfig()
