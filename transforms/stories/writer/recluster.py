"""The re-clustering repair (REPAIR_MODE "recluster", DESIGN.md section 4): average linkage over article pairs, then
the new clusters reconciled with the old story ids.

At a repair tick (every REPAIR_EVERY while some live story had an article in the REPAIR_WINDOW):

1. Seeds: the window's stories that changed since the previous tick (:func:`transforms.stories.writer.repair.active`) and
   are out of their REPAIR_COOLDOWN. Candidates of a seed: its nearest live centroids in the writer's ANN index
   (MERGE_CANDIDATES + MERGE_REACH of them, dense >= MERGE_FLOOR: MERGE_REACH reaches stories older than the window) and
   up to POSTING_TAKE stories that share one of its rarer entity keys (the writer's entity postings, rarest keys
   first, keys held by at most POSTING_LIMIT stories). Stories in their cool-down are never candidates. Seeds and candidates form components
   (union-find over seed-candidate edges) of at most RECLUSTER_MAX_ARTICLES originals: an edge that would grow a
   component past the bound is dropped, so a tick costs O(changed stories x candidates), never O(live stories),
   and never an all-pairs pass over the live set.
2. The originals of each component are re-clustered by average linkage over the learned pair score
   (:mod:`transforms.stories.writer.pairscore`: dense, entity and TF-IDF cosines under the writer's live IDF and the time
   term), plus RECLUSTER_STAY_BONUS (logit) for two articles that share a story now: the online joins were made on
   the profile score, which beats batch average linkage on text with bodies (docs/stories.md), and the bonus keeps
   them unless the pair score is clearly against them. The cut is the model's bar of the component's text kind plus
   RECLUSTER_MARGIN_BODY / RECLUSTER_MARGIN_HEADLINE (None: that text kind is not re-clustered; with
   RECLUSTER_MARGIN_HEADLINE None and no live original with a body, ``WriterState.live_bodies``, every component
   would be of the headline kind, so the tick does not look for them). Two stories with
   bodies whose headlines name different things (:mod:`transforms.stories.writer.evidence`) never share a cluster,
   nor do two stories of untimed leads whose article pairs the joins' complete linkage would refuse
   (:func:`lead_pairs`, RECLUSTER_LEAD_PAIRS).
3. Ids (:func:`reconcile`): an old story's heir is the cluster holding more than half of its originals, else (no
   majority: a split into halves or parts) the cluster holding its representative. A cluster heir to old stories
   keeps the oldest (smallest) of their ids and the others become its aliases (one hop: the store re-points older
   aliases); a cluster heir to none is a new group and gets a new id. The changes: SPLIT to a new id for each new
   group (from the old story it takes most from), SPLIT into an existing story for every other move (``other_story_id``
   names a live story then), MERGE for every absorbed story (by then holding only its heir's articles). Copies move
   with their originals. Every changed story gets ``last_repair_at`` = the tick: the cool-down keeps pages from
   flapping.

Every choice is a function of the live stories, the index, the IDF statistics and the tick (members in article-id
order, ties by the first index), so a restored writer re-clusters exactly as the uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transforms.common import SPLIT
from transforms.stories.vocabulary import places as placemod
from transforms.stories.writer import explanations, pairscore
from transforms.stories.writer.evidence import disagree
from transforms.stories.writer.lexical import row_matrix
from transforms.stories.writer.records import Change
from transforms.stories.writer.repair import active, apply_merge, repair_tick
from transforms.stories.writer.scoring import WEEKDAYS, min_pair, saga_terms, short
from transforms.stories.writer.state import Member, Story, WriterOutput, recompute_centroid
from transforms.stories.writer.writer_state import WriterState

POSTING_LIMIT = 50  # an entity key held by more live stories than this names a topic, not an event
POSTING_TAKE = 10  # candidates of one seed from its entity postings (rarest keys first): the bound of a tick's work


def recluster_tick(w: WriterState, tick: int) -> list[WriterOutput]:
    """The re-clustering repair of one tick (module docstring); returns its SPLIT and MERGE outputs."""
    c = w.config
    cool = tick - c.repair_cooldown_ms

    def free(s: Story | None) -> bool:
        return s is not None and s.n > 0 and (s.last_repair_at is None or s.last_repair_at <= cool)

    out: list[WriterOutput] = []
    if c.recluster_margin_headline is None and w.live_bodies <= 0:
        # every component would be of headline kind (no live story has an original with a body), which is not
        # re-clustered: the same outputs without finding the components (~7 % of a headline stream's writer)
        return repair_tick(w, tick) if c.recluster_then_merge else _ticked(w, out)
    seeds = [
        w.stories[sid]
        for sid in w.window_stories(tick - c.repair_window_ms)
        if free(w.stories[sid]) and active(w.stories[sid], tick, c)
    ]
    repaired: set[int] = set()
    for comp in components(w, seeds, free):
        w.tally_max("recluster_largest", sum(s.n for s in comp))
        if len(comp) == 1 and comp[0].n < 2:
            continue
        out.extend(recluster(w, comp, tick, repaired))
    if c.recluster_then_merge:  # the stories changed above are in their cool-down now: it leaves them alone
        return out + repair_tick(w, tick)
    return _ticked(w, out)


def _ticked(w: WriterState, out: list[WriterOutput]) -> list[WriterOutput]:
    w.tally("repair_ticks")
    return out


def candidates(w: WriterState, s: Story, free: Callable[[Story | None], bool]) -> list[int]:
    """Ids of the live stories a seed may exchange articles with: its ANN neighbours and entity-posting partners."""
    c = w.config
    found = set()
    for sid, dense in w.index.search(s.centroid().astype(np.float32), k=c.merge_candidates + c.merge_reach + 1):
        if sid != s.story_id and dense >= c.merge_floor and free(w.stories.get(sid)):
            found.add(sid)
    own = s.story_id
    held = [(e, w.postings.get(e)) for e in s.ent]
    # a key only this story holds gives no partner: left out before sorting (the same partners, in the same order)
    keys = sorted((len(p), e) for e, p in held if p and len(p) <= POSTING_LIMIT and not (len(p) == 1 and own in p))
    taken = 0
    for _, e in keys:  # rarest keys first, at most POSTING_TAKE stories in all
        for sid in sorted(w.postings[e]):
            if taken >= POSTING_TAKE:
                return sorted(found)
            if sid != s.story_id and sid not in found and free(w.stories.get(sid)):
                found.add(sid)
                taken += 1
    return sorted(found)


def components(w: WriterState, seeds: list[Story], free: Callable[[Story | None], bool]) -> list[list[Story]]:
    """Seeds and their candidates joined by union-find, each component at most RECLUSTER_MAX_ARTICLES originals."""
    limit = w.config.recluster_max_articles
    parent: dict[int, int] = {}
    size: dict[int, int] = {}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def node(sid: int) -> None:
        if sid not in parent:
            parent[sid], size[sid] = sid, w.stories[sid].n

    for s in sorted(seeds, key=lambda s: s.story_id):
        node(s.story_id)
        for o in candidates(w, s, free):
            node(o)
            a, b = find(s.story_id), find(o)
            if a != b and size[a] + size[b] <= limit:
                parent[max(a, b)], size[min(a, b)] = min(a, b), size[a] + size[b]
    groups: dict[int, list[Story]] = {}
    for sid in sorted(parent):
        groups.setdefault(find(sid), []).append(w.stories[sid])
    return [groups[k] for k in sorted(groups)]


def pair_logits(w: WriterState, ms: list[Member]) -> np.ndarray:
    """The learned pair score's logits between members (IDF: the writer's live statistics)."""
    V = np.stack([m.v64 for m in ms])
    rows = w.lex.unit_rows_of(ms)
    mats = []
    for j in (1, 0):  # entities, then TF-IDF (the order of pairscore.FEATURES)
        M = row_matrix([r[j] for r in rows])  # columns: the sorted keys
        mats.append(M @ M.T)
    known = np.array([m.time_known for m in ms])
    at = np.array([m.at for m in ms], dtype=np.int64)
    places = placemod.relation_matrix([m.places for m in ms])
    X = np.stack([V @ V.T, mats[0], mats[1], pairscore.time_feature(known, at), places], axis=-1)
    L = pairscore.load(w.config.pair_score or pairscore.MODEL_PATH).logit(X)
    if w.config.far_apart_hours is None:
        return L
    far = pairscore.far_apart(known, at, w.config.far_apart_hours)
    return np.where(far, pairscore.CUT_LOGIT, L)  # never one cluster: a pair days apart


def average_linkage(L: np.ndarray, bar: float) -> list[int]:
    """Labels (index of each cluster's first member) of average linkage over ``L``, merging while the best average
    is >= ``bar``. Exact: the pair with the largest average merges first, ties by the smallest indices."""
    n = len(L)
    S = L.astype(np.float64).copy()
    size = np.ones(n)
    alive = np.ones(n, dtype=bool)
    label = list(range(n))
    A = S / np.outer(size, size)
    A[np.tril_indices(n)] = -np.inf
    while True:
        k = int(np.argmax(A))
        i, j = divmod(k, n)
        if not A[i, j] >= bar:
            break
        S[i, :] += S[j, :]
        S[:, i] += S[:, j]
        size[i] += size[j]
        alive[j] = False
        label = [i if x == j else x for x in label]
        row = S[i] / (size[i] * size)
        row[~alive] = -np.inf
        A[i, i + 1 :] = row[i + 1 :]
        A[:i, i] = np.where(alive[:i], row[:i], -np.inf)
        A[j, :] = -np.inf
        A[:, j] = -np.inf
    return label


def veto(w: WriterState, comp: list[Story], story: np.ndarray, L: np.ndarray, bar: float) -> None:
    """Never put together articles of two stories with bodies whose headlines name different things (the merge
    veto of :mod:`transforms.stories.writer.evidence`, story against story as in the merge pass): their pairs get -inf, so
    no cluster that holds both can reach the bar. Checked only for the story pairs that have an article pair at the
    bar (found in one vectorised pass: a component of 400 single-article stories has 80,000 story pairs)."""
    body = {s.story_id for s in comp if s.has_body}
    i, j = np.nonzero(np.triu(bar <= L, 1) & (story[:, None] != story[None, :]))
    pairs = sorted({(min(a, b), max(a, b)) for a, b in zip(story[i].tolist(), story[j].tolist())})
    cache: dict = {}
    for a, b in pairs:
        if (
            a in body
            and b in body
            and disagree(w.scorer.evidence(w.stories[a], cache), w.scorer.evidence(w.stories[b], cache))
        ):
            ra, rb = np.flatnonzero(story == a), np.flatnonzero(story == b)
            L[np.ix_(ra, rb)] = -np.inf
            L[np.ix_(rb, ra)] = -np.inf


def lead_pairs(w: WriterState, comp: list[Story], ms: list[Member], story: np.ndarray, L: np.ndarray, body: float):
    """The complete linkage of untimed leads (scoring.min_pair) inside the re-clustering (RECLUSTER_LEAD_PAIRS): two
    articles of different stories whose originals are all leads (or headlines) without a time never share a cluster
    when their pair logit is below the model's body bar plus UNTIMED_LEAD_MIN_PAIR, or when both stories' leads name
    days of the week and the two stories share none (LEAD_WEEKDAYS; a story's days: those its leads name). ``L`` gets
    -inf there, so no average can reach the bar."""
    c = w.config
    leads = {s.story_id for s in comp if s.n and all(short(c, m) and not m.time_known for m in s.originals)}
    floor = min_pair(c, [m for s in comp if s.story_id in leads for m in s.originals], [])
    if floor is None or not leads:
        return
    lead = np.array([sid in leads for sid in story.tolist()])
    cross = lead[:, None] & lead[None, :] & (story[:, None] != story[None, :])
    weak = cross & (body + floor > L)
    if c.lead_weekdays:  # a story's days: those its leads name; two stories that name days and share none clash
        order = sorted(WEEKDAYS)
        named = np.zeros((len(ms), len(order)), dtype=bool)
        for i, m in enumerate(ms):
            named[i] = [d in m.terms for d in order]
        sids = sorted(set(story.tolist()))
        row = np.searchsorted(sids, story)
        days = np.zeros((len(sids), len(order)), dtype=bool)
        np.logical_or.at(days, row, named)
        any_day = days.any(axis=1)
        clash = any_day[:, None] & any_day[None, :] & ~((days.astype(np.int64) @ days.T.astype(np.int64)) > 0)
        weak |= cross & clash[np.ix_(row, row)]
    if c.lead_item_stories is not None:
        weak |= cross & saga_pairs(w, comp, leads, ms, story, ~weak & cross)
    L[weak] = -np.inf


def saga_pairs(w: WriterState, comp: list[Story], leads: set, ms: list[Member], story: np.ndarray, asked: np.ndarray):
    """Of the member pairs ``asked``, those that share no term outside both stories' saga terms
    (scoring.saga_terms over each story's CANDIDATES nearest stories of the component, by centroid, as a join's
    candidates): the join's LEAD_ITEM_STORIES rule, which the average linkage would otherwise undo."""
    c = w.config
    out = np.zeros_like(asked)
    lead = [s for s in comp if s.story_id in leads]
    if len(lead) < 2:
        return out
    C = np.stack([s.centroid() for s in lead])
    D = C @ C.T
    saga: dict[int, frozenset] = {}
    for k, s in enumerate(lead):
        near = sorted(range(len(lead)), key=lambda i: (-round(float(D[k, i]), 9), lead[i].story_id))
        saga[s.story_id] = saga_terms(c, [lead[i] for i in near if i != k][: c.candidates]) or frozenset()
    terms = [frozenset(m.terms) for m in ms]
    sids = story.tolist()
    for i, j in zip(*np.nonzero(np.triu(asked, 1))):
        if not (terms[i] & terms[j]) - saga[sids[i]] - saga[sids[j]]:
            out[i, j] = out[j, i] = True
    return out


def reconcile(old: dict[int, list[str]], reps: dict[int, str], clusters: list[list[str]]):
    """(id of each cluster, None for a new group; old story id -> index of its heir cluster).

    An old story's heir is the cluster holding more than half of its articles, else the one holding its
    representative; a cluster heir to several old stories keeps the smallest (oldest) id."""
    where = {a: k for k, cl in enumerate(clusters) for a in cl}
    heirs: dict[int, int] = {}
    for sid in sorted(old):
        counts: dict[int, int] = {}
        for a in old[sid]:
            counts[where[a]] = counts.get(where[a], 0) + 1
        top = min(counts, key=lambda k: (-counts[k], k))
        heirs[sid] = top if 2 * counts[top] > len(old[sid]) else where[reps[sid]]
    ids: list[int | None] = [None] * len(clusters)
    for sid in sorted(old, reverse=True):
        ids[heirs[sid]] = sid
    return ids, heirs


def recluster(w: WriterState, comp: list[Story], tick: int, repaired: set[int]) -> list[WriterOutput]:
    """Re-cluster one component's originals and turn the difference into SPLIT and MERGE changes."""
    c = w.config
    body = 2 * sum(s.n_body for s in comp) >= sum(s.n for s in comp)  # of the originals: as counting them gives
    margin = c.recluster_margin_body if body else c.recluster_margin_headline
    if margin is None:
        return []  # this text kind is left to the merge pass (decided before sorting its originals: no cost)
    ms = sorted((m for s in comp for m in s.originals), key=lambda m: m.article_id)
    of = {m.article_id: w.article_story[m.article_id] for m in ms}
    model = pairscore.load(c.pair_score or pairscore.MODEL_PATH)
    bar = float(model.thresholds["body" if body else "headline"]) + margin
    L = pair_logits(w, ms)
    story = np.array([of[m.article_id] for m in ms])
    L = L + c.recluster_stay_bonus * (story[:, None] == story[None, :])
    if c.recluster_lead_pairs and body:
        lead_pairs(w, comp, ms, story, L, float(model.thresholds["body"]))
    veto(w, comp, story, L, bar)
    labels = average_linkage(L, bar)
    by_label: dict[int, list[str]] = {}
    for m, k in zip(ms, labels):
        by_label.setdefault(k, []).append(m.article_id)
    clusters = [by_label[k] for k in sorted(by_label)]
    old = {s.story_id: sorted(m.article_id for m in s.originals) for s in comp}
    if sorted(map(tuple, clusters)) == sorted(tuple(v) for v in old.values()):
        return []  # nothing moves
    ids, heirs = reconcile(old, {s.story_id: s.representative() for s in comp}, clusters)
    out = execute(w, comp, clusters, ids, heirs, tick, repaired)
    if w.explain:
        row = {m.article_id: i for i, m in enumerate(ms)}
        for o in out:
            ch = o.change
            if ch["kind"] == SPLIT:  # between the moved originals and what their old story keeps (< bar)
                moved = [row[a] for a in ch["article_ids"] if a in row]
                kept = [row[a] for a in clusters[heirs[int(ch["story_id"])]]]
                score = float(L[np.ix_(moved, kept)].mean())
            else:  # the receiving cluster's average pair logit
                idx = [row[a] for a in clusters[heirs[int(ch["other_story_id"])]]]
                score = float(L[np.ix_(idx, idx)][np.triu_indices(len(idx), 1)].mean())
            o.explain = explain(w, o, score, bar)
    return out


def explain(w: WriterState, o: WriterOutput, score: float, bar: float) -> dict:
    """The explanation record of a re-clustering change (transforms/stories/writer/explanations.py's split and merge
    records, ``rule`` "recluster"; logits with the stay bonus): a MERGE's ``score`` is its cluster's average pair
    logit (a weighted mean of the cluster's average-linkage merge heights, so >= ``bar``, the cut); a SPLIT's, the
    average between the moved originals and what their old story keeps."""
    ch = o.change
    if ch["kind"] == SPLIT:
        rec = explanations.split(w, ch, score, bar, int(o.story_meta.get("originals") or 0))
    else:
        detail = {"criterion": "recluster average linkage (learned pair score)", "score": score, "bar": float(bar)}
        rec = explanations.merge(w, ch, len(o.members), (int(ch["story_id"]), detail))
    rec["rule"] = "recluster"
    return rec


def execute(
    w: WriterState,
    comp: list[Story],
    clusters: list[list[str]],
    ids: list[int | None],
    heirs: dict[int, int],
    tick: int,
    repaired: set[int],
) -> list[WriterOutput]:
    """The changes that turn the component's stories into ``clusters`` under ``ids`` (see the module docstring);
    the ids of the stories it changed are added to ``repaired``."""
    where = {a: k for k, cl in enumerate(clusters) for a in cl}
    out: list[WriterOutput] = []
    target = list(ids)
    old_ids = [s.story_id for s in comp]

    def portion(sid: int, k: int) -> list[Member]:
        s = w.stories[sid]
        keys = {a for a in s.members if not s.members[a].is_copy and where.get(a) == k}
        return [m for a, m in sorted(s.members.items()) if a in keys or (m.is_copy and m.copy_of in keys)]

    for k in range(len(clusters)):  # new groups, from the old story they take most from (ties: the older)
        if target[k] is None:
            src = min(old_ids, key=lambda sid: (-len(portion(sid, k)), sid))
            out.append(move(w, src, None, portion(src, k), tick))
            target[k] = out[-1].change["other_story_id"]
            repaired.update((src, target[k]))
    for sid in old_ids:  # every other move, into the story that holds the cluster's id
        for k in sorted({where[m.article_id] for m in w.stories[sid].originals} - {heirs[sid]}):
            out.append(move(w, sid, target[k], portion(sid, k), tick))
            repaired.update((sid, target[k]))
    for sid in old_ids:  # absorbed stories: by now they hold only their heir's articles
        if target[heirs[sid]] != sid:
            out.append(apply_merge(w, target[heirs[sid]], sid, tick, repaired))
    for sid in repaired:
        if sid in w.stories:
            w.stories[sid].last_repair_at = tick
    w.tally("recluster_moves", sum(1 for o in out if o.change["kind"] == SPLIT))
    return out


def move(w: WriterState, src: int, dst: int | None, moving: list[Member], tick: int) -> WriterOutput:
    """Move ``moving`` (originals and their copies) from story ``src`` to story ``dst`` (None: a new story) as one
    SPLIT change: ``other_story_id`` is the receiving story, new or existing."""
    c = w.config
    seq = w.next_seq()
    s = w.stories[src]
    ids = {m.article_id for m in moving}
    kept = w.reset_story(s, [m for m in s.members.values() if m.article_id not in ids], recount=False)
    kept.last_repair_at = tick
    if dst is None:
        dst = w.mint(tick)
        ns = Story(dst, w.language, *recompute_centroid(moving, c.half_life_ms))
        w.put_story(ns, moving, count=False)  # still live: counted since it arrived
        w.tally("split")
    else:
        ns = w.reset_story(w.stories[dst], list(w.stories[dst].members.values()) + moving, recount=False)
    ns.last_repair_at = tick
    ch = w.change(seq, Change(SPLIT, src, at=tick, centroid=kept.centroid(), other=dst, article_ids=sorted(ids)))
    return WriterOutput(
        ch,
        w.meta(kept),
        {},
        other_meta=w.meta(ns),
        other_centroid=[float(x) for x in ns.centroid()],
        other_members={m.article_id: m.to_record() for m in sorted(moving, key=lambda m: m.article_id)},
    )
