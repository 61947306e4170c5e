"""Turn one section's scored candidates into the page's story order: hysteresis, diversity, the Breaking pin.

Reads plain Python values (story ids, scores, representatives' publishers, sections, unit centroids); writes
nothing. Per page, in this order (DESIGN.md section 5):

1. Hysteresis. Start from last cycle's order (stories still eligible), merge newcomers in by score, then swap
   neighbours only where the lower one's smoothed score beats the upper one's by more than 10 %. Each swap removes
   an inversion of the score order, so the passes terminate; a story whose score wobbles within 10 % of its
   neighbour keeps its place, and pages do not jump every minute.
2. Pins. Breaking stories relevant to the edition go first, most recent burst first (at most ``max_pins``), in
   the cycle their burst is detected, for at most 2 h; the pin bypasses smoothing and hysteresis.
3. Diversity. Walk the order; never take a story whose centroid cosine with an already placed story exceeds 0.85
   (the lower-ranked near-duplicate leaves the page). In the top 10 take at most 2 representatives of one
   publisher -- an ownership group (publishers.json ``owner``): the caller's ``publisher_of`` gives the group, so
   sister sites share the limit -- a story blocked by its representative's group first tries its best article
   from another group (the caller's ``alternative``), else it waits below the top 10 (and is left out if the top 10 never
   fills: the publisher limit is an invariant). On pages that mix sections take at most 3 stories of one topical
   section in the top 10; this one is best effort: if only stories of full sections are left, they fill the top
   10 rather than leave it short. Pinned stories count toward the limits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain

import numpy as np


def hysteresis_order(
    previous: list[int], scores: dict[int, float], threshold: float, best_first: bool = False
) -> list[int]:
    """Order ``scores``' stories: keep ``previous`` order unless a neighbour is more than ``threshold`` better.
    ``best_first``: ``scores`` already holds its stories by descending score, then ascending id (the newcomers'
    order, then taken as it is instead of sorted again)."""
    prev = [s for s in previous if s in scores]
    seen = set(prev)
    if best_first:
        new = [s for s in scores if s not in seen]
    else:
        new = sorted((s for s in scores if s not in seen), key=lambda s: (-scores[s], s))
    merged: list[int] = []
    j = 0
    for s in prev:
        while j < len(new) and scores[new[j]] > scores[s]:
            merged.append(new[j])
            j += 1
        merged.append(s)
    merged.extend(new[j:])
    # One insertion pass: a story moves up past its upper neighbour only while it beats it by more than the
    # threshold. Afterwards no neighbour pair is more than ``threshold`` out of order (the fixed point of
    # repeated neighbour swaps), in O(n + swaps).
    factor = 1.0 + threshold
    for k in range(1, len(merged)):
        j = k
        x = merged[k]
        sx = scores[x]
        while j > 0 and sx > scores[merged[j - 1]] * factor:
            merged[j] = merged[j - 1]
            j -= 1
        merged[j] = x
    return merged


class Slot:
    __slots__ = ("story_id", "pinned", "alt_rep")

    def __init__(self, story_id: int, pinned: bool = False, alt_rep: int | None = None):
        self.story_id = story_id
        self.pinned = pinned
        self.alt_rep = alt_rep  # an article chosen instead of the representative (publisher limit)


@dataclass
class DiversityRules:
    top_n: int = 10
    max_per_section: int = 3
    max_per_publisher: int = 2
    max_cosine: float = 0.85
    page_size: int = 30
    mixed_sections: bool = True
    # At most one story per storyline in the first ``storyline_top`` slots (the top page: ``storyline_of`` given);
    # the others wait and come right after them, still in their order.
    storyline_top: int = 5
    storyline_of: dict | None = None  # story -> storyline (the top page only; None: no storyline rule)


@dataclass(frozen=True)
class StoryTraits:
    """What the diversity rules look up per story: its representative's publisher (ownership group), its topical
    section (labelled stories only), and its row of unit centroids in ``vec_matrix`` (stories without a centroid
    are never near-duplicates)."""

    publisher_of: dict[int, str] = field(default_factory=dict)
    section_of: dict[int, str] = field(default_factory=dict)
    vec_index: dict[int, int] = field(default_factory=dict)
    vec_matrix: np.ndarray | None = None
    vec_seq: dict[int, float] | None = None  # story -> the centroid_seq its row of vec_matrix is of (Gram reuse)


class Gram:
    """The cosines of one page's stories with each other (``sims``, in ascending story order) kept across cycles
    for one page of one edition (the cycle keeps one per section): a page's ~60 candidates are mostly the same set
    from minute to minute (in another order three times in four), and their 60 x 384 Gram matrix was a third of
    the page assembly's CPU. Reused while the page asks for the same stories at the same centroid sequences
    (``key``): the same rows of unit centroids (centroids.py: a row's vector is the same bits whichever cycle made
    it), so the same matrix product. ``near`` keeps what the diversity rule reads of it at one cosine limit
    (:class:`_Page`), made from the same matrix.

    When the set moved (a new story, a new centroid: seven pages in ten, ~6 of ~60 rows), ``near`` is updated row
    by row instead (``sims`` None then): the cosines of the new rows with every story of the page (one k x 60
    product), the kept stories' pairs taken as they were. That is what the full product decides as long as no
    cosine lies within :data:`MARGIN` of the limit (``clean``: the limit at which none of the page's does): a
    float64 dot product of two unit vectors of up to a few thousand dimensions is within ~1e-12 of the exact
    cosine however BLAS orders its sums, so a cosine further than :data:`MARGIN` from the limit is on the same side
    of it in every product. A cosine nearer than that, a NaN or a page mostly of new rows takes the full product."""

    __slots__ = ("key", "sims", "near", "clean")

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.sims: np.ndarray | None = None
        self.near: tuple | None = None  # (max_cosine, near pairs as _Page.near holds them, _Page.lone)
        self.clean: float | None = None  # a limit no cosine of ``key``'s stories is within MARGIN of


MARGIN = 1e-9  # how far from the cosine limit a cosine must be for a row-by-row update to decide as the full product


def assemble(
    order: list[int],
    pins: list[int],
    traits: StoryTraits,
    rules: DiversityRules,
    alternative=None,
    gram: Gram | None = None,
) -> list[Slot]:
    """The page's slots.
    ``rules.storyline_of``: a story of a storyline already in the first ``storyline_top`` waits (_one_per_storyline).
    ``alternative(story_id, blocked_publishers) -> (article, publisher) | None``.
    ``gram``: the page's cosines kept from its last cycle (:class:`Gram`; with ``traits.vec_seq``), updated here.
    """
    page = _Page(traits, rules, alternative, list(dict.fromkeys(list(pins) + list(order))), gram)
    placed, publisher_of, section_of = page.placed, traits.publisher_of, traits.section_of
    waiting: list[Slot] = []
    pinned = set(pins)
    # made as the loop asks (a page stops at page_size, most often half-way through its ~60 candidates)
    queue = chain((Slot(s, pinned=True) for s in pins), (Slot(s) for s in order if s not in pinned))
    section_waiting: list[Slot] = []  # may still fill the top 10 if nothing else is left
    storyline_of = rules.storyline_of
    if storyline_of:
        queue = _one_per_storyline(queue, placed, storyline_of, rules.storyline_top)
    for slot in queue:
        if len(placed) >= rules.page_size:
            break
        sid = slot.story_id
        if page.near_duplicate(sid):
            continue
        if len(placed) < rules.top_n and not slot.pinned:
            sec = section_of.get(sid)
            if rules.mixed_sections and sec is not None and page.sec_count.get(sec, 0) >= rules.max_per_section:
                waiting.append(slot)
                section_waiting.append(slot)
                continue
            pub = page.publisher_ok(slot)
            if pub is False:
                waiting.append(slot)
                continue
            page.place(slot, pub)
            if len(placed) == rules.top_n:
                page.flush_waiting(waiting)
                waiting, section_waiting = [], []
            continue
        page.place(slot, publisher_of.get(sid))
    if len(placed) < rules.top_n and section_waiting:
        page.fill_top_from_section_waiting(section_waiting, waiting)
    # Stories still waiting when the page has fewer than top_n stories are left out: the publisher limit is an
    # invariant of every top 10, and a short page is better than a page one publisher dominates.
    return placed


class _Page:
    """One page being assembled: the placed slots, the per-publisher and per-section counts, and which stories are
    near-duplicates of a placed one.

    A story is a near-duplicate when some placed story's cosine with it (its row of ``sims``) is over the limit.
    The pairs over the limit are few (a page's ~60 candidates hold a handful), so they are found once per page,
    ``near``: story position -> the positions whose row is over the limit in its column, the diagonal left out
    (``lone``: the positions whose cosine with themselves is not over it, none for unit centroids); a placement
    then only records its position. ``near`` and ``lone`` come from the matrix, or from last cycle's updated row by
    row (:class:`Gram`; ``sims`` None then). A matrix holding NaN (a centroid of NaNs) keeps each story's
    highest cosine with a placed story instead (``closest``, updated with np.maximum as stories are placed), as
    the rule was first written: a NaN there hides every later cosine, which the pairs would not."""

    def __init__(self, traits: StoryTraits, rules: DiversityRules, alternative, everyone: list[int], gram=None):
        self.traits, self.rules, self.alternative = traits, rules, alternative
        self.placed: list[Slot] = []
        self.pub_count: dict[str, int] = {}
        self.sec_count: dict[str, int] = {}
        everyone = sorted(filter(traits.vec_index.__contains__, everyone))  # by story: one matrix per set of stories
        self.index = dict(zip(everyone, range(len(everyone))))
        self.sims = None
        self.near: dict[int, list[int]] | None = None
        self.lone: set[int] = set()  # positions whose cosine with themselves is not over the limit (near holds none)
        self.closest: np.ndarray | None = None
        self.taken: set[int] = set()  # positions placed
        if not everyone or traits.vec_matrix is None:
            return
        seq, limit = traits.vec_seq, rules.max_cosine
        key = None
        if gram is not None and seq is not None:
            key = (tuple(everyone), tuple(map(seq.__getitem__, everyone)))
        if key is not None and gram.key == key:
            if gram.near is not None and gram.near[0] == limit:
                self.near, self.lone = gram.near[1], gram.near[2]
                self.sims = gram.sims
                return
        elif key is not None and gram.clean == limit and self._update(gram, key, limit):
            return
        if key is not None and gram.key == key and gram.sims is not None:
            self.sims = gram.sims
        else:
            m = traits.vec_matrix[[traits.vec_index[x] for x in everyone]]
            self.sims = m @ m.T  # one small matrix per page
            if key is not None:
                gram.key, gram.sims, gram.near, gram.clean = key, self.sims, None, None
        if np.isnan(self.sims).any():
            self.closest = np.full(len(everyone), -1.0)
            return
        over = self.sims > limit
        self.lone = set(np.flatnonzero(~over.diagonal()).tolist())
        np.fill_diagonal(over, False)
        near: dict[int, list[int]] = {}
        rows, cols = np.nonzero(over)
        for p, j in zip(rows.tolist(), cols.tolist()):
            got = near.get(j)
            if got is None:
                near[j] = [p]
            else:
                got.append(p)
        self.near = near
        if key is not None:
            gram.near = (limit, near, self.lone)
            gram.clean = limit if not (np.abs(self.sims - limit) <= MARGIN).any() else None

    def _update(self, gram: Gram, key: tuple, limit: float) -> bool:
        """``near`` and ``lone`` from the last cycle's (``gram``, clean at ``limit``) and the cosines of the new rows
        only (:class:`Gram`); False, leaving ``gram`` as it was, when the full product must decide."""
        everyone, seqs = key
        old_ids, old_seqs = gram.key
        old_pos = dict(zip(old_ids, range(len(old_ids))))
        fresh, moved = [], {}  # new positions of the new rows; old position -> new position of the others
        for j, (sid, q) in enumerate(zip(everyone, seqs)):
            o = old_pos.get(sid)
            if o is not None and old_seqs[o] == q:
                moved[o] = j
            else:
                fresh.append(j)
        n = len(everyone)
        if 6 * len(fresh) > n or gram.near is None or gram.near[0] != limit:
            return False  # many new rows (their product would run on BLAS's threads), or no pairs kept: the full one
        near: dict[int, list[int]] = {}
        lone: set[int] = set()
        if fresh:
            vec_index = self.traits.vec_index
            m = self.traits.vec_matrix[[vec_index[x] for x in everyone]]
            r = m[fresh] @ m.T  # the new rows' cosines with every story of the page
            if np.isnan(r).any() or (np.abs(r - limit) <= MARGIN).any():
                return False
            over = r > limit
            is_fresh = set(fresh)
            for a, p in zip(*(x.tolist() for x in np.nonzero(over))):
                f = fresh[a]
                if p == f:
                    continue
                got = near.get(p)  # p's partners: the new row f (a new p gets f from f's own row too)
                if got is None:
                    near[p] = [f]
                else:
                    got.append(f)
                if p not in is_fresh:
                    got = near.get(f)  # f's partners: the kept story p
                    if got is None:
                        near[f] = [p]
                    else:
                        got.append(p)
            lone.update(f for a, f in enumerate(fresh) if not over[a, f])
        for o, ps in gram.near[1].items():  # the kept pairs, at their new positions
            j = moved.get(o)
            if j is None:
                continue
            for q in ps:
                p = moved.get(q)
                if p is None:
                    continue
                got = near.get(j)
                if got is None:
                    near[j] = [p]
                else:
                    got.append(p)
        lone.update(moved[o] for o in gram.near[2] if o in moved)
        self.near, self.lone = near, lone
        gram.key, gram.sims, gram.near = key, None, (limit, near, lone)  # still clean at ``limit``
        return True

    def near_duplicate(self, sid: int) -> bool:
        j = self.index.get(sid)
        if j is None:
            return False
        if self.closest is not None:
            return self.closest[j] > self.rules.max_cosine
        if self.near is None:
            return False
        if j in self.taken and j not in self.lone:
            return True
        near = self.near.get(j)
        return near is not None and any(p in self.taken for p in near)

    def place(self, slot: Slot, pub: str | None) -> None:
        self.placed.append(slot)
        j = self.index.get(slot.story_id)
        if j is not None and (self.near is not None or self.closest is not None):
            if self.closest is not None:
                np.maximum(self.closest, self.sims[j], out=self.closest)
            else:
                self.taken.add(j)
        if pub is not None:
            self.pub_count[pub] = self.pub_count.get(pub, 0) + 1
        sec = self.traits.section_of.get(slot.story_id)
        if sec is not None:
            self.sec_count[sec] = self.sec_count.get(sec, 0) + 1

    def publisher_ok(self, slot: Slot):
        """The publisher the slot will show (its representative's, or an alternative's), or False if blocked."""
        rules, pub_count = self.rules, self.pub_count
        pub = self.traits.publisher_of.get(slot.story_id)
        if pub is None or pub_count.get(pub, 0) < rules.max_per_publisher:
            return pub
        blocked = {p for p, c in pub_count.items() if c >= rules.max_per_publisher}
        alt = self.alternative(slot.story_id, blocked) if self.alternative else None
        if alt is None:
            return False
        slot.alt_rep, pub = alt
        return pub

    def fill_top_from_section_waiting(self, section_waiting: list[Slot], waiting: list[Slot]) -> None:
        """Best effort for sections: when every story left is from a section already at its limit, the top 10 is
        still filled (in order) rather than left short. The publisher limit is never relaxed."""
        rules, placed = self.rules, self.placed
        for slot in section_waiting:
            if len(placed) >= rules.top_n:
                break
            if self.near_duplicate(slot.story_id) or _storyline_taken(
                slot, placed, rules.storyline_of, rules.storyline_top
            ):
                continue
            pub = self.publisher_ok(slot)
            if pub is False:
                continue
            self.place(slot, pub)
            waiting.remove(slot)
        if len(placed) == rules.top_n:
            self.flush_waiting(waiting)

    def flush_waiting(self, waiting: list[Slot]) -> None:
        """The top 10 is full: the waiting stories come right after it, in their order."""
        for w in waiting:
            if len(self.placed) >= self.rules.page_size:
                break
            if not self.near_duplicate(w.story_id):
                self.place(w, self.traits.publisher_of.get(w.story_id))


def _storyline_taken(slot: Slot, placed: list[Slot], storyline_of, top: int) -> bool:
    """Whether the slot would be a second story of its storyline among the first ``top`` placed (pins exempt)."""
    if not storyline_of or slot.pinned or len(placed) >= top:
        return False
    sl = storyline_of.get(slot.story_id)
    return sl is not None and any(storyline_of.get(p.story_id) == sl for p in placed)


def _one_per_storyline(queue, placed: list[Slot], storyline_of: dict[int, int], top: int):
    """The queue, holding back a story whose storyline is already in the first ``top`` placed slots; once ``top``
    slots are placed the held stories come first, in their order. Lazy: it sees ``placed`` grow as it yields."""
    held = []
    for slot in queue:
        if held and len(placed) >= top:
            yield from held
            held = []
        if _storyline_taken(slot, placed, storyline_of, top):
            held.append(slot)
            continue
        yield slot
    yield from held
