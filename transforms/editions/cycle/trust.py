"""Trust gates of a ranking cycle: corroboration for top stories, holds of fast low-trust
stories for an editor, and the "developing" label as "key facts changed".

Plain Python + numpy, called by :func:`transforms.editions.cycle.run.cycle_documents` once per cycle over the cycle's
candidates only (~2,000 stories whatever the book size: one pass over the story x publisher pairs, no work per
pair of stories). Thresholds are ``ranking`` parameters of editions.json (:class:`~.params.RankParams`):

Corroboration (``corroboration_publishers`` 2, ``corroboration_authority`` 0.5): a story is corroborated when at
least 2 *independent voices* back it with an original: distinct ownership groups (publishers.json ``owner``; a
publisher without one is its own group, so sister sites count once) whose topic authority is above 0.5 -- the
"strong publisher" test of the Breaking rule (:func:`transforms.editions.bursts.bursts.is_strong`, the same floor
``STRONG_AUTHORITY``). A Breaking story (pinned by the ranker) is corroborated by definition: the Breaking rule
already demanded 5 strong publishers. On the top page an uncorroborated story comes after every corroborated one:
it is shown only when corroborated stories cannot fill the page (a quiet night), never ahead of one. Section pages
do not gate on it (a single good source is fine for a section's long list).

Hold (``hold_min_originals`` 5, ``hold_velocity`` 1.5, ``low_trust_authority`` 0.3): a story growing fast (at least
5 originals first seen in the last 30 minutes and a velocity factor >= 1.5, the scoring's 30-minute surge) whose
publishers are all low-trust (every topic authority < 0.3: content farms and unknown hosts, 0.1) is *held*: left
out of the top page entirely and placed after every other story on section pages (still findable by a reader
browsing the section, never leading it). Held stories are listed in the candidate pool document (``held``, at
most :data:`MAX_HELD`, most originals first) and printed by ``newsroom control held --edition ID``; an editor who
judges one sound pins it (``newsroom control pin``), which overrides the hold.

Developing (``developing_window_min`` 60): a story is labelled "developing" for an hour after the key facts of its
representative's headline changed: its numbers ("5 dead" -> "7 dead") or named entities (capitalised words
after the first: "Smith" -> "Jones"; a title-case headline has no telling capitals, so only its numbers count).
The first headline seen of a story sets its facts without a label; a headline without key facts keeps the old
ones. Only new facts count, brought by an article placed or edited within the hour: the hourly near-tie rotation
between headlines the story already held changes the headline, not the facts, and labels nothing. The facts are kept per candidate in the edition's memory (``EditionMemory.facts``); a story that leaves the
candidates forgets them. A velocity surge alone no longer labels a story (it raises its score).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from transforms.common import MINUTE_MS
from transforms.editions.bursts.bursts import is_strong
from transforms.editions.cycle.arrays import sorted_member, unique_ints
from transforms.editions.cycle.kept import LineageMemo

MAX_HELD = 50
HELD_REASON = "fast_low_trust"
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_TITLE_CASE_SHARE = 0.7  # capitalised share of words (4+) above which a headline is title case


@dataclass
class Gates:
    """The trust verdicts of one cycle, by story id, and the developing label per candidate position."""

    uncorroborated: set
    held: set
    held_entries: list  # the pool's ``held`` list
    developing_l: list  # per candidate position


@lru_cache(maxsize=65536)
def key_facts(title: str) -> tuple[str, ...]:
    """The key facts of a headline: its numbers ("n:5") and named entities ("e:smith"), sorted (module docstring)."""
    facts = {"n:" + m.replace(",", "") for m in _NUMBER.findall(title)}
    words = _WORD.findall(title)
    caps = [w for w in words[1:] if w[0].isupper()]
    if len(words) < 4 or len(caps) < _TITLE_CASE_SHARE * (len(words) - 1):
        facts |= {"e:" + w.lower() for w in caps}
    return tuple(sorted(facts))


def gates(book, p, memory, now: int, ranked, kept: KeptFacts | None = None) -> Gates:
    """Corroboration, holds and developing labels of a cycle's candidates (module docstring); ``kept``: the
    edition's :class:`KeptFacts` (its CycleCache), None: every candidate's facts looked at."""
    f, rows = ranked.f, ranked.cand.rows
    ids = book.stories.id[rows]
    voices, top_auth = shared_support(book, p, f, rows, now)
    corroborated = (voices >= p.corroboration_publishers) | sorted_member(rows, ranked.forced)
    n30, velocity = f.n30[rows], f.velocity[rows]
    held = (n30 >= p.hold_min_originals) & (velocity >= p.hold_velocity) & (top_auth < p.low_trust_authority)
    held_pos = np.flatnonzero(held)
    entries = [
        {
            "story_id": str(int(ids[i])),
            "reason": HELD_REASON,
            "originals_30m": int(n30[i]),
            "velocity": round(float(velocity[i]), 3),
            "top_authority": round(float(top_auth[i]), 3),
            "publishers": int(f.pub_count[rows[i]]),
        }
        for i in held_pos[np.lexsort((ids[held_pos], -n30[held_pos]))][:MAX_HELD].tolist()
    ]
    return Gates(
        set(ids[~corroborated & ~held].tolist()),
        set(ids[held_pos].tolist()),
        entries,
        developing(book, ids, ranked.reps.rep, memory, now, p, kept),
    )


# A story's corroboration figures (its strong independent voices, the top weight among its pairs that count) read
# the book's tables and the features at the cycle's minute alone (which pairs count and their weights: features
# are the same for every edition), so the editions whose books have the same tables share them at a minute
# (kept.LineageMemo, by the minute): the editions of a language rank mostly the same stories, and each looked up
# its candidates' pairs again. Kept per scope and minute as sorted story rows with their figures (a value of the
# memo's dict, replaced whole by one dict operation when an edition adds its stories: a race loses an addition,
# never gives a wrong figure). Budget: scopes (a minute of a language's candidates, ~20 bytes a story).
SHARED_SUPPORT = LineageMemo(kept=64)


def shared_support(book, p, f, rows: np.ndarray, now: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`support` of the candidate ``rows`` (sorted, unique) at ``now``, of the rows another edition of the
    lineage asked for at this minute from :data:`SHARED_SUPPORT`, of the others computed (and kept there)."""
    memo = SHARED_SUPPORT.get(book, p, now, dict)
    old = memo.get("rows")
    voices, top_auth = np.zeros(rows.size, np.int64), np.zeros(rows.size)
    known = np.zeros(rows.size, bool)
    if old is not None and old[0].size and rows.size:
        pos = np.minimum(np.searchsorted(old[0], rows), old[0].size - 1)
        known = old[0][pos] == rows
        voices[known], top_auth[known] = old[1][pos[known]], old[2][pos[known]]
    if known.all():
        return voices, top_auth
    miss = np.flatnonzero(~known)
    made = support(book, p, f, rows[miss])
    voices[miss], top_auth[miss] = made
    if old is None:
        memo["rows"] = (rows[miss], *made)
    else:
        order = np.argsort(np.concatenate([old[0], rows[miss]]), kind="stable")
        memo["rows"] = tuple(np.concatenate([a, b])[order] for a, b in zip(old, (rows[miss], *made)))
    return voices, top_auth


def support(book, p, f, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per story row of ``rows`` (sorted, unique): how many ownership groups back it with a strong pair that counts
    (``f.sp_ok``, weight ``f.sp_w`` above ``corroboration_authority``), and the top weight among its pairs that
    count. A story's figures read its own pairs alone, whichever rows are asked with it."""
    k = rows.size
    sel = book.pair_rows_of(rows)  # the candidates' own pairs: O(their pairs), every result below ignores order
    sel = sel[f.sp_ok[sel]]
    gs, w = np.searchsorted(rows, book.pairs.story[sel]), f.sp_w[sel]  # candidate position (rows: sorted, unique)
    strong = is_strong(w, p.corroboration_authority)
    groups = book.publisher_groups()[book.pairs.publisher[sel[strong]]]
    span = int(groups.max()) + 1 if groups.size else 1
    keys = unique_ints(gs[strong] * span + groups)
    voices = np.bincount(keys // span, minlength=k)
    top_auth = np.zeros(k)
    np.maximum.at(top_auth, gs, w)
    return voices, top_auth


class KeptFacts:
    """Per edition (in its CycleCache, in-process): the facts dict :func:`developing` left in the edition's memory
    last cycle and, per candidate story then, its representative's row and version and its entry in that dict. A
    candidate with the same representative at the same version (the same headline) whose memory holds the facts of
    that very dict has them already: its headline's facts were merged into them last cycle, so they cannot change
    now, and only the window test is made, for all of them at once (~1,700 candidates per edition and cycle, a few
    new or changed). A memory read back from state (another dict) is looked at whole."""

    __slots__ = ("facts", "ids", "reps", "versions", "seen", "changed")

    def __init__(self) -> None:
        self.facts: dict | None = None
        self.ids = self.reps = self.versions = self.changed = np.zeros(0, np.int64)
        self.seen = np.zeros(0, object)  # per kept id: its entry in ``facts`` (None: none)

    def same(self, book, memory_facts: dict, ids: np.ndarray, reps: np.ndarray) -> tuple:
        """Per candidate whether it has the same representative and version as last cycle (see above), its index
        in the kept arrays (where it has), and the candidates' ids and representatives' versions as arrays."""
        versions = np.where(reps >= 0, book.articles.version[np.maximum(reps, 0)], -1).astype(np.int64)
        if self.facts is not memory_facts or not self.ids.size or not ids.size:
            return np.zeros(ids.size, bool), None, ids, versions
        pos = np.minimum(np.searchsorted(self.ids, ids), self.ids.size - 1)
        same = (self.ids[pos] == ids) & (self.reps[pos] == reps) & (self.versions[pos] == versions) & (reps >= 0)
        return same, pos, ids, versions

    def keep(self, facts: dict, ids: np.ndarray, reps: np.ndarray, versions: np.ndarray, seen: list) -> None:
        """``seen``: per candidate (as ``ids``), its entry in ``facts`` or None."""
        order = np.argsort(ids, kind="stable")
        self.facts, self.ids = facts, ids[order]
        self.reps, self.versions = reps[order], versions[order]
        self.seen = np.fromiter(seen, object, len(seen))[order]
        self.changed = np.fromiter((0 if v is None else v[1] for v in seen), np.int64, len(seen))[order]


def developing(book, ids, reps, memory, now: int, p, kept: KeptFacts | None = None) -> list[bool]:
    """Per candidate: its story's key facts changed within ``developing_window_min``; updates the facts kept in
    ``memory`` (story id -> (every key fact its headlines have shown, time of their last change; 0: never)).

    A change is a fact no earlier headline of the story showed, carried by an article placed or edited within the
    window (a new report, a corrected headline): the near-tie rotation between headlines already in the story
    (``book.articles.event_minute`` older than the window) or back to one already shown labels nothing."""
    old = getattr(memory, "facts", None) or {}  # absent from memories pickled before the trust gates
    window = p.developing_window_min * MINUTE_MS
    cards, event_minute, get = book.articles.card, book.articles.event_minute, old.get
    since = now - window  # labelled: a last change after it (0: never changed, never labelled)
    ids, reps = np.asarray(ids, np.int64), np.asarray(reps, np.int64)  # per candidate (lists or arrays)
    ids_l, n = ids.tolist(), ids.size
    if kept is not None:
        same, pos, ids, versions = kept.same(book, old, ids, reps)
    else:
        same, pos, ids, versions = np.zeros(n, bool), None, 0, 0
    if pos is not None and same.any():
        # the same headline as last cycle: its facts are last cycle's entry (KeptFacts), in ``old`` (every kept
        # candidate with a representative has one), and only the window test is made
        changed = kept.changed[pos]
        out = (same & (changed > since) & (changed > 0)).tolist()
        seen_l = kept.seen[pos].tolist()  # the others' are overwritten below
    else:
        out, seen_l = [False] * n, [None] * n
    for k in np.flatnonzero(~same).tolist():
        sid, rep = ids_l[k], int(reps[k])
        seen = get(sid)
        if rep >= 0:
            facts = key_facts(cards[rep]["title"] or "")
            if seen is None:
                seen = (facts, 0)
            elif facts != seen[0] and not set(facts).issubset(seen[0]):  # most minutes: the same facts
                union = tuple(sorted(set(seen[0]) | set(facts)))
                recent = now - int(event_minute[rep]) * MINUTE_MS < window
                seen = (union, now if recent else seen[1])
        seen_l[k] = seen
        out[k] = seen is not None and seen[1] > since and seen[1] > 0
    new = {sid: seen for sid, seen in zip(ids_l, seen_l) if seen is not None}
    memory.facts = new
    if kept is not None:
        kept.keep(new, ids, reps, versions, seen_l)
    return out


def page_order(order: list, clickbait: set, g: Gates, top_page: bool) -> list:
    """A page's story order after the clickbait demotion (headlines.py) and the trust gates: on the top page
    clickbait and held stories are left out and uncorroborated ones follow every corroborated one; on section
    pages clickbait and held stories come last, in their order."""
    if top_page:
        gone = clickbait | g.held
        kept = [s for s in order if s not in gone]
        if not g.uncorroborated:
            return kept
        return [s for s in kept if s not in g.uncorroborated] + [s for s in kept if s in g.uncorroborated]
    last = clickbait | g.held
    if not last:
        return order
    return [s for s in order if s not in last] + [s for s in order if s in last]
