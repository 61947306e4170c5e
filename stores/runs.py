"""Run claims: at most one batch run writes a namespace at a time, and a namespace that holds a run is refused
unless the caller asks to resume it.

Why: two backfills into one namespace (one after the other, or at the same time) each restored the same writer
state, minted the same story ids and merged unrelated events into one story, and both exited 0.

How: the namespace's PointerStore holds the pointer ``run`` (:data:`RUN_POINTER`; the origin's watcher ignores a
name without a slash). Its version is the epoch of the run that holds the namespace: 1 for the first run, +1 for
each resume. It moves only by ``compare_and_set`` (stores/base.py: racing movers, exactly one wins) on both
backends, so of two runs claiming at once exactly one gets an epoch. The pointer's history records every claim.

- :func:`claim` without ``resume``: takes epoch 1 of an empty namespace, else raises :class:`NamespaceTaken`.
- :func:`claim` with ``resume``: moves the epoch from the one it read to the next; losing that race (another run
  resumed at the same moment) raises :class:`NamespaceTaken` too.
- :meth:`RunClaim.check` (the fence): raises :class:`RunSuperseded` once a later run has taken the namespace; a
  job checks it before it writes (``stores.beam_io.CheckRunClaimFn`` in pipelines/backfill.py) and after it ends, so a run resumed
  while an earlier one still runs stops the earlier one instead of interleaving with it.

Story ids of a resumed run cannot collide with the earlier run's: the story store keeps the largest id it ever
applied per language (StoryStore.minted_floor) and a restored writer mints above it.
"""

from __future__ import annotations

from dataclasses import dataclass

from stores.base import PointerStore

RUN_POINTER = "run"


class NamespaceTaken(RuntimeError):
    """The namespace already holds a run and the caller did not ask to resume it (or lost a resume race)."""


class RunSuperseded(RuntimeError):
    """A later run claimed the namespace while this one was running: this run must stop writing."""


@dataclass(frozen=True)
class RunClaim:
    namespace: str
    epoch: int

    def check(self, pointers: PointerStore) -> None:
        """Raise RunSuperseded when the namespace's epoch is no longer this run's."""
        current = pointers.get(RUN_POINTER)
        if current != self.epoch:
            raise RunSuperseded(
                f"namespace {self.namespace!r} was claimed by a later run (epoch {current}) while this run (epoch "
                f"{self.epoch}) was running: this run stopped writing; the later run owns the namespace"
            )


def claim(pointers: PointerStore, namespace: str, resume: bool = False, reason: str = "backfill") -> RunClaim:
    """Claim ``namespace`` for a run. Returns the claim (its epoch). Raises NamespaceTaken (see the module doc)."""
    current = pointers.get(RUN_POINTER)
    if current is None and pointers.compare_and_set(RUN_POINTER, None, 1, reason=f"{reason}: new run"):
        return RunClaim(namespace, 1)
    if current is None:
        current = pointers.get(RUN_POINTER)  # another run claimed it between our read and our move
    if not resume:
        raise NamespaceTaken(
            f"namespace {namespace!r} already holds a run (epoch {current}): pass --resume to continue it "
            f"(its stories, ids and writer state), or choose another --namespace"
        )
    if pointers.compare_and_set(RUN_POINTER, current, current + 1, reason=f"{reason}: resume"):
        return RunClaim(namespace, current + 1)
    raise NamespaceTaken(
        f"namespace {namespace!r}: another run resumed it at the same time (epoch moved from {current} to "
        f"{pointers.get(RUN_POINTER)}); only one run may write a namespace"
    )
