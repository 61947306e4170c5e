"""The last phases of a ranking cycle: what is laid over the ranked documents before they become snapshot items.

In order, each a function of the cycle's context and its output (:data:`PHASES`, run by
:func:`transforms.editions.cycle.run.run_cycle` when the context has :class:`Overlays`):

1. editorial controls: pins, demotes, labels (:func:`~transforms.editions.overlays.controls.apply_controls`), an overlay
   the edition's memory never sees, counted ``controls_<kind>``;
2. takedowns: tombstoned articles and stories are never in a snapshot
   (:func:`~transforms.editions.overlays.takedowns.apply_takedowns`), counted ``takedowns_applied``;
3. the change-only replay records the pages a reader will see (:meth:`~transforms.editions.ranker.steady.SteadyCheck.record`:
   after controls and takedowns, before anything that does not touch the pages);
4. cities and page sections on the pool entries, then the followed and trending topic pages
   (:mod:`transforms.editions.overlays.topics`), counted ``topic_pages``;
5. the storyline pages of the storylines that changed (:mod:`transforms.editions.overlays.storyline_pages`: after the
   coverage they name, with the takedowns applied), counted ``storyline_pages``, and the shards of the storyline
   index they touch (:mod:`transforms.editions.overlays.storyline_index`).

The overlays' inputs are read by the caller once per cycle (controls, the takedown set, follower counts) and
handed in as one frozen :class:`Overlays`, so the change-only replay's steady test sees the same values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from transforms.editions.overlays.controls import apply_controls
from transforms.editions.overlays.storyline_pages import storyline_items_and_index
from transforms.editions.overlays.takedowns import apply_takedowns
from transforms.editions.overlays.topics import annotate_pool, topic_items

if TYPE_CHECKING:
    from transforms.editions.cycle.context import CycleContext
    from transforms.editions.cycle.run import CycleOutput


@dataclass(frozen=True)
class Overlays:
    """This cycle's overlay inputs. ``controls``: the edition's editorial controls (None: no controls applied);
    ``takedowns``: a ``stores.takedowns.TakedownSet`` (None: nothing omitted); ``followed``: ``{topic id:
    followers}`` (None: no topic pages built, the origin builds each on demand); ``cities``: gazetteer city codes
    (:func:`~transforms.editions.overlays.topics.city_codes`)."""

    controls: list | None = None
    takedowns: object | None = None
    followed: dict | None = None
    cities: dict = field(default_factory=dict)

    def apply(self, ctx: CycleContext, out: CycleOutput) -> None:
        """Run the overlay phases (:data:`PHASES`, in order) on the cycle's output."""
        for phase in PHASES:
            phase(ctx, out)


@dataclass(frozen=True)
class OverlayReaders:
    """Where a ranker reads the overlay inputs every cycle. ``controls(edition, now) ->
    [stores.controls.Control]`` (:class:`~transforms.editions.overlays.controls.ControlReader`); ``takedowns() ->
    stores.takedowns.TakedownSet`` (:class:`~transforms.editions.overlays.takedowns.TakedownReader`); ``followed() -> {topic
    id: followers}`` (:class:`~transforms.editions.overlays.topics.FollowedTopics`). None: that overlay is not applied."""

    controls: Callable | None = None
    takedowns: Callable | None = None
    followed: Callable | None = None

    def read(self, edition: str, now: int, cities: dict) -> Overlays:
        """This cycle's :class:`Overlays` (controls, then takedowns, then followed counts)."""
        return Overlays(
            controls=self.controls(edition, now) if self.controls is not None else None,
            takedowns=self.takedowns() if self.takedowns is not None else None,
            followed=self.followed() if self.followed is not None else None,
            cities=cities,
        )


def controls(ctx: CycleContext, out: CycleOutput) -> None:
    if ctx.overlays.controls is not None:
        applied = apply_controls(out, ctx.overlays.controls, ctx.book, ctx.now, ctx.params.page_size)
        for kind, n in applied.items():
            ctx.count(f"controls_{kind}", n)


def takedowns(ctx: CycleContext, out: CycleOutput) -> None:
    if ctx.overlays.takedowns is not None:
        omitted = apply_takedowns(out, ctx.overlays.takedowns)
        if omitted:
            ctx.count("takedowns_applied", omitted)


def record_steady(ctx: CycleContext, out: CycleOutput) -> None:
    if ctx.steady is not None:
        ctx.steady.record(out)


def topic_pages(ctx: CycleContext, out: CycleOutput) -> None:
    # the page sections and cities on the pool entries, and their topic ids, in one pass (topics.annotate_pool)
    followed = ctx.overlays.followed
    ids_of = annotate_pool(out.pool, out.pages, ctx.overlays.cities, followed is not None, ctx.cache.topics)
    ctx.clock.lap("page sections")
    kept = ctx.cache.topic_items
    out.topic_pages = topic_items(out.pool, followed, ids_of=ids_of, kept=kept) if followed is not None else []
    ctx.count("topic_pages", len(out.topic_pages))
    ctx.clock.lap("topic pages")


def storyline_pages(ctx: CycleContext, out: CycleOutput) -> None:
    # with their entries in the storyline index, so topic pages list them beyond the live pool
    pages, index = storyline_items_and_index(ctx.book, out, ctx.params, ctx.now, ctx.overlays.takedowns)
    ctx.count("storyline_pages", len(pages))
    out.storylines = pages + index
    ctx.clock.lap("storyline pages")


PHASES: tuple[Callable[[CycleContext, CycleOutput], None], ...] = (
    controls,
    takedowns,
    record_steady,
    topic_pages,
    storyline_pages,
)
