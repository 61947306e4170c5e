"""The change-only replay (``newsroom backfill --snapshots``): a minute whose pages cannot differ from the last ones
built is decided, not built.

Why: a replay over months ranked every minute of every edition's chain (a story change keeps it going for
``idle_cycles`` minutes, 30) and built, itemised and published some 900 documents a minute, almost all of them
the same as the minute before; the publisher then found them unchanged. With snapshots a backfill cost ~27-44x
the backfill without.

The rule. Every chain minute still runs the decisions that carry the edition's memory forward, exactly as the
every-minute replay does: scores and their smoothing, the hourly publisher cap, representatives, trust gates
(developing facts), the hysteresis order and page slots (:func:`~transforms.editions.cycle.run.run_cycle` up to
``choose_page_slots``). The documents, cards, pool, coverage, topic pages and their snapshot items are built only
when something a reader sees can differ from the last minute built (a *full* minute). A minute is *steady*, and
builds nothing, when all of these equal the last full minute's (:meth:`SteadyWatch.key`):

- the book: the same object (no compaction) with no event folded since (no STORY change, membership, link,
  merge, expiry or burst pulse);
- every page's slots: story, representative (or the publisher-limit alternative), supporting articles, pin, and
  per story its developing label, card section and publisher count (the live window moves those);
- the pool's stories in order (smoothed score order: a freshness swap changes it), representatives, labels and
  sections; the held list (fast low-trust stories, with their rounded velocity);
- the takedown set, the followed-topic counts (topic pages), and per held page whether its hold is still on;

and no pin, demote or label is active on the edition (a demote compares scores, which move every minute), and no
page's story count is below half the most stories that page ever had (:attr:`EditionMemory.page_max`): such a page
could be rejected as ``lost_more_than_half``, and the publisher counts consecutive proposals of a shrink before it
accepts one, so every proposal must be made.

Why that is exact. The documents are functions of the inputs above and of the scores; the publisher compares what
readers see *without* scores, version and cycle (documents.content_digest). A steady minute's documents would have
the last full minute's digests, so each would have been ``unchanged`` (or rejected again for the same reason, or
held again), which stores and moves nothing. The memory a full minute would also update is updated here: the
representatives' impressions (the same pages, so the same counts, which the next hour's publisher cap reads) and
the last cycle; the coverage versions stay (same stories, same versions). The pool's ``concentration`` (fairness.py)
moves every minute with the day's counts; it is monitoring, not reader-visible content, so the publisher's digest
leaves it out (documents.VOLATILE) and a pool that changed only there is not a new version in either replay. Conservative by construction: any
difference, even one that would not change a byte (a score-only swap below the pages, a fold that changes
nothing), builds the minute in full, which is always right.

What is not skipped here: the decisions themselves (their memory -- smoothing over consecutive minutes,
hysteresis, impressions -- is what makes the next built minute byte-identical); a replay skips the steady minutes
whose decisions are proven to repeat (:mod:`transforms.editions.ranker.skip`). The every-minute replay stays
selectable (``--snapshots_every_minute``, RankEditions ``change_only=False``, the default of streaming) and
tests/pipelines/test_backfill_change_only.py compares the two byte for byte.
"""

from __future__ import annotations

from transforms.editions.cycle import fairness
from transforms.editions.cycle.run import choose_page_slots, pool_positions
from transforms.editions.vocabulary.documents import VOLATILE, VOLATILE_ENTRY, digest_and_bytes


class SteadyWatch:
    """Per edition, in-process next to the cached book: the key of the last full minute. A rebuilt book starts
    without one (its first minute is built in full)."""

    def __init__(self):
        self.last_key = None
        self.counts: dict = {}  # section -> stories on the last full minute's emitted page
        self.proposed: dict = {}  # page or pool pointer -> (content digest, minimum) of the last one proposed
        self.proposed_docs: dict = {}  # page or pool pointer -> the last document found to have that digest

    def unproposed(self, items: list, memory, controls, known: dict | None = None) -> list:
        """A full minute's snapshot items without the pages and pool that repeat what this edition last proposed
        for their pointer: the same reader-visible content (documents.content_digest) and the same minimum.

        Why that is exact: only this edition proposes its pages and pool, so the pointer is where the last proposal
        left it. That proposal was published (the pointer now holds this content: ``unchanged`` again), found
        ``unchanged``, or rejected for its content (too few stories, no representative: the same live count, so
        the same rejection). Its minute values (version, cycle times, finite scores) are the cycle's own, so the
        schema does not tell two minutes apart. Kept anyway: a page below half the most stories it ever had (the
        publisher counts consecutive proposals of a shrink), and every item while the edition has any control
        (holds, pins: the map restarts after). Topic pages are always proposed (the publisher times their
        retirement from each proposal), coverage and storylines as before.

        ``known`` (``CycleOutput.page_digests``): section -> (page, :class:`~transforms.editions.cycle.run.PageDigest`)
        of the pages built from kept entries (run.py ``page_keys``): a page that is that very document (no overlay
        replaced it) has the digest its entries were found to have before, so it is not digested again; a page
        digested here leaves its digest there for the next cycle with the same inputs. Any other page or pool that
        holds what the last document found to have the proposed digest held (:func:`same_content`: a pool's entries
        are copies of the ranker's cached ones, value for value) has that digest without being digested. A page or
        pool digested here holding ``null`` (nearly all: ``image_url``) is written canonically for the digest's proof
        (documents.digest_and_bytes); its item carries those bytes (``data``) to the publisher, which stores them
        instead of writing the document again."""
        if controls:
            self.proposed.clear()
            self.proposed_docs.clear()
            return items
        page_max = getattr(memory, "page_max", {})
        out = []
        for item in items:
            kind, doc = item["kind"], item["doc"]
            if kind not in ("edition_page", "candidate_pool"):
                out.append(item)
                continue
            pointer = item["pointer"]
            page = (known or {}).get(doc.get("section")) if kind == "edition_page" else None
            last, last_doc = self.proposed.get(pointer), self.proposed_docs.get(pointer)
            if page is not None and page[0] is doc and page[1].digest is not None:
                digest = page[1].digest  # built from the same entries as a page digested before
            else:
                if last is not None and last_doc is not None and same_content(last_doc, doc):
                    digest = last[0]  # what the last document with the proposed digest held
                else:  # the canonical bytes too when the digest needs them as its proof, for the publisher to store
                    digest, data = digest_and_bytes(doc)
                    if data is not None:
                        item["data"] = data
                if page is not None and page[0] is doc:
                    page[1].digest = digest
            item["digest"] = digest  # the publisher's own (snapshots.py): not computed twice
            key = (digest, item["min_stories"])
            shrinking = kind == "edition_page" and 2 * len(doc["stories"]) < page_max.get(doc["section"], 0)
            if last is None or last[0] == digest:
                self.proposed_docs[pointer] = doc
            if not shrinking and last == key:
                continue
            self.proposed[pointer] = key
            self.proposed_docs[pointer] = doc
            out.append(item)
        return out

    def checker(self, memory, now: int, params, overlays) -> SteadyCheck | None:
        """``ctx.steady`` for :func:`~transforms.editions.cycle.run.run_cycle`: asks whether the minute builds nothing.
        ``overlays``: the :class:`~transforms.editions.overlays.phases.Overlays` read this minute (controls, takedown set,
        followed counts). None when no minute of the edition may be steady now (an active pin, demote or label)."""
        controls, taken, followed = overlays.controls, overlays.takedowns, overlays.followed
        if any(c.kind != "hold" and c.active(now) for c in controls or ()):
            self.last_key = None  # an active overlay: every minute in full
            return None
        holds = tuple(sorted((c.pointer, c.version, now < c.expires_at) for c in controls or () if c.kind == "hold"))
        extra = (taken, tuple(sorted((followed or {}).items())), holds)
        return SteadyCheck(self, memory, now, params, extra)

    def _no_shrink(self, memory) -> bool:
        page_max = getattr(memory, "page_max", {})
        return all(2 * n >= page_max.get(sec, 0) for sec, n in self.counts.items())

    def record(self, out, memory) -> None:
        """After a full minute (controls and takedowns applied): its pages' story counts, and the most each page
        ever had (EditionMemory.page_max bounds any live version's count)."""
        if not hasattr(memory, "page_max"):
            memory.page_max = {}
        self.counts = {sec: len(doc["stories"]) for sec, doc in out.pages.items()}
        for sec, n in self.counts.items():
            memory.page_max[sec] = max(memory.page_max.get(sec, 0), n)

    @staticmethod
    def key(book, ranked, facts, gates, page_slots, params, extra: tuple) -> tuple:
        """What a reader could see of this minute, scores aside (see the module docstring)."""
        dev, pub_count, section = gates.developing_l, ranked.f.pub_count, facts.section
        pinned = set(facts.pinned_ids)

        def story(i: int, rep: int) -> tuple:
            sid = facts.ids_l[i]
            return (sid, rep, dev[i], section(i), int(pub_count[facts.rows_l[i]]), sid in pinned)

        pages = tuple(  # most sections are empty (a small book): their () without a generator
            (sec, tuple((story(i, rep), tuple(sup), slot.pinned) for slot, i, rep, sup, _ in chosen) if chosen else ())
            for sec, chosen in page_slots.by_section.items()
        )
        pool = tuple(story(i, facts.rep_l[i]) for i in pool_positions(ranked, facts, params).tolist())
        held = tuple(tuple(sorted(e.items())) for e in gates.held_entries)
        return (id(book), len(book.applied), book.bad_events, pages, pool, held, extra)


class SteadyCheck:
    """One minute's steady test (called by the cycle once its page slots are decided) and, when the minute is built
    in full, the record of its pages (the overlays' ``record_steady`` phase, after controls and takedowns)."""

    def __init__(self, watch: SteadyWatch, memory, now: int, params, extra: tuple):
        self.watch, self.memory, self.now, self.params, self.extra = watch, memory, now, params, extra
        self.prev_pages = dict(memory.prev_pages)  # the pages this minute's slots are decided after (:meth:`repeats`)
        self.decided = None  # (ranked, gates, page_slots) of a steady minute (transforms/editions/ranker/skip.py)
        self.full = None  # (ranked, facts, gates, page_slots) of a full minute (:meth:`repeats`)

    def __call__(self, book, ranked, facts, gates, page_slots) -> bool:
        """True (after the steady memory updates) when the minute builds nothing."""
        watch = self.watch
        key = watch.key(book, ranked, facts, gates, page_slots, self.params, self.extra)
        if key == watch.last_key and watch._no_shrink(self.memory):
            count_impressions(book, page_slots, self.memory)
            self.memory.last_cycle = self.now
            self.decided = (ranked, gates, page_slots)
            return True
        watch.last_key = key  # a full minute follows: its documents are what this key describes
        self.full = (ranked, facts, gates, page_slots)
        return False

    def repeats(self, ctx) -> bool:
        """After a full minute of a replay: whether the next minute, its scores compared as this minute's (what
        :func:`~transforms.editions.ranker.skip.horizon` then proves for the minutes it skips), decides this minute's
        page slots again. The hysteresis reads the previous minute's pages, which a full minute changed, so the
        slots are decided once more with this minute's as the previous ones (memory.prev_pages restored after);
        the same slots, and no page shrinking, make the next minute steady, so it need not be ranked to start the
        skip: ``decided`` is set as a steady minute sets it. When this minute's pages hold the stories the previous
        pages held, in order (``prev_pages`` is all ``choose_page_slots`` reads of the memory), deciding again would
        repeat this minute's decision on the same inputs: the same slots, not decided a second time."""
        full, memory = self.full, self.memory
        if full is None or not self.watch._no_shrink(memory):
            return False
        ranked, facts, gates, page_slots = full
        if memory.prev_pages == self.prev_pages:
            self.decided = (ranked, gates, page_slots)
            return True
        previous = dict(memory.prev_pages)
        again = choose_page_slots(ctx, ranked, facts, gates)
        memory.prev_pages = previous
        if _slots(again) != _slots(page_slots):
            return False
        self.decided = (ranked, gates, page_slots)
        return True

    def record(self, out) -> None:
        self.watch.record(out, self.memory)


_SHARED = (str, int, float, tuple, dict, type(None))  # value types a document shares with the ranker's caches


def _same_value(a, b) -> bool:
    """``b`` is ``a`` (a value a document shares with the ranker's caches: strings, numbers, tuples and the cached
    cards, which nothing changes in place once built) or an equal string or integer of the same type (a bool is
    not an int here, so ``true`` never meets ``1``)."""
    if a is b:
        return type(a) in _SHARED
    return type(a) is type(b) and type(a) in (str, int) and a == b


def same_content(last: dict, doc: dict) -> bool:
    """Whether ``doc`` provably holds what ``last`` held of what documents.content_digest hashes (so the same
    digest): the same top-level keys with the same values but the volatile ones (version, cycle times,
    concentration), and the same number of entries, each with the same keys and, but for its score, the same
    values (:func:`_same_value`). A pool's entries are copies of the ranker's cached ones (run.py pool_document),
    so an unchanged pool holds the very values of the last; a list (``held``) is never taken as the same. False
    when not proven: the caller digests."""
    if last.keys() != doc.keys():
        return False
    for k, v in doc.items():
        if k != "stories" and k not in VOLATILE and not _same_value(last[k], v):
            return False
    a, b = last.get("stories"), doc.get("stories")
    if type(a) is not list or type(b) is not list or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if type(x) is not dict or type(y) is not dict or x.keys() != y.keys():
            return False
        for k, v in y.items():
            if k not in VOLATILE_ENTRY and not _same_value(x[k], v):
                return False
    return True


def _slots(page_slots) -> tuple:
    """What a page shows of its slots, scores aside."""
    return tuple(
        (
            sec,
            tuple((slot.story_id, slot.pinned, slot.alt_rep, i, rep, tuple(sup)) for slot, i, rep, sup, _ in chosen)
            if chosen
            else (),
        )
        for sec, chosen in page_slots.by_section.items()
    )


def count_impressions(book, page_slots, memory, times: int = 1) -> None:
    """The representatives' position-weighted impressions of ``times`` steady minutes, counted as page_documents
    counts a built one (:func:`transforms.editions.cycle.fairness.count_impressions`, the same slots in the same
    order, weighed once and added ``times`` times over: the same floats)."""
    shown = [
        (rank, rep) for chosen in page_slots.by_section.values() for rank, (_, _, rep, _, _) in enumerate(chosen, 1)
    ]
    fairness.add_counts(memory, fairness.shown_weights(book, shown)[1], times)
