"""The backfill writer's checkpoint: what a bounded writer has decided so far, so that ``newsroom backfill --resume``
continues an interrupted run from its last checkpoint instead of deciding every article again.

Reads and writes, in one folder per run (``OUTPUT/checkpoint``, local), per language:

- ``outputs-<language>.pkl``: the writer's outputs (the dicts the writer DoFn yields), appended in decision order,
  one pickle each, flushed and fsync-ed before the state that counts them;
- ``writer-<language>.pkl``: the whole writer (:class:`~transforms.stories.writer.cluster.StoryClusterer`, its
  stories, index, queue and counters) pickled after its last output, with the number of outputs it has made;
  written to a temporary file and renamed, so a run killed while writing keeps the previous one.

Why a pickle and not the story store: the store holds what ApplyStoryChanges applied, which a bounded run does only
after its writer stage has decided everything (the apply stage reads the writer's whole output), so an interrupted
run has applied nothing; and a writer rebuilt from the store is exact only with its Beam token. The pickled writer
is the writer itself: it continues with the same ids, seqs and decisions as the uninterrupted run, so the resumed
run's files are byte-identical (tests/pipelines/test_backfill_checkpoint.py). Cost: one pickle of the writer per
checkpoint (~0.5 MB and ~15 ms for 1,000 decided articles), at most every :data:`EVERY_S` seconds.

:func:`advance_in_steps` is how the bounded tick decides with checkpoints: the queued articles in steps, each step
``advance(bound)`` up to one millisecond before the next step's first article (the decisions of one ``advance`` to
the end: the streaming job advances in such steps, and transforms/stories/writer/overlap.py batches the same way), a
chance to checkpoint after each. A step holds at most ``step`` articles and, once the writer's rate is measured, about
as many as it decides before the next checkpoint is due (:meth:`WriterCheckpoint.due_in`), so a run of any size
checkpoints about every :data:`EVERY_S` seconds (never more often), not only every ``step`` articles.
"""

from __future__ import annotations

import math
import os
import pickle
import time
from collections.abc import Callable

EVERY_S = 30.0  # seconds between checkpoints of a writer (0: after every step)
STEP = 4096  # queued articles decided, at most, between two chances to checkpoint
MIN_STEP = 64  # queued articles in the first step (no rate measured yet) and in each when every step checkpoints
_clock = time.monotonic  # the checkpoint's clock (injectable for tests)


class WriterCheckpoint:
    """The checkpoint of one language's bounded writer in ``folder`` (see the module docstring)."""

    def __init__(self, folder: str, language: str, every_s: float | None = None):
        self.folder, self.language = folder, language
        self.every_s = EVERY_S if every_s is None else every_s
        self._saved_at: float | None = None
        self.n_saved, self._offset = 0, 0  # outputs the last checkpoint counts, and where they end in the file
        self._pending: list[dict] = []  # outputs made since the last checkpoint

    @property
    def _outputs_path(self) -> str:
        return os.path.join(self.folder, f"outputs-{self.language}.pkl")

    @property
    def _writer_path(self) -> str:
        return os.path.join(self.folder, f"writer-{self.language}.pkl")

    def load(self):
        """(writer, its outputs so far) of the last checkpoint, or (None, []) when there is none."""
        try:
            with open(self._writer_path, "rb") as f:
                n, writer = pickle.load(f)
        except FileNotFoundError:
            return None, []
        outputs = []
        with open(self._outputs_path, "rb") as f:
            for _ in range(n):  # a run killed between its outputs and its state appended more: not counted
                outputs.append(pickle.load(f))
            self._offset = f.tell()
        self.n_saved = n
        return writer, outputs

    def save(self, writer, outputs: list[dict], force: bool = False) -> bool:
        """Checkpoint ``writer`` after ``outputs``, the outputs it made since the last call (none of the loaded
        ones), at most every ``every_s`` seconds (``force``: now). Returns whether it saved. Only the outputs not
        saved yet are held here (a step's or a few: the tick emits each step's as soon as it is decided)."""
        self._pending.extend(outputs)
        now = _clock()
        if not force and self._saved_at is not None and now - self._saved_at < self.every_s:
            return False
        os.makedirs(self.folder, exist_ok=True)
        with open(self._outputs_path, "r+b" if self._offset else "wb") as f:
            f.seek(self._offset)  # past the outputs the last checkpoint counts: anything after them is dropped
            for out in self._pending:
                pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
            f.truncate()
            f.flush()
            os.fsync(f.fileno())
            offset = f.tell()
        n = self.n_saved + len(self._pending)
        tmp = self._writer_path + ".tmp"
        with open(tmp, "wb") as f:
            pickle.dump((n, writer), f, protocol=pickle.HIGHEST_PROTOCOL)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._writer_path)
        self.n_saved, self._saved_at, self._offset, self._pending = n, now, offset, []
        return True

    def due_in(self) -> float:
        """Seconds until :meth:`save` saves again (0: at the next call)."""
        return 0.0 if self._saved_at is None else max(0.0, self._saved_at + self.every_s - _clock())


def decided_ids(outputs: list[dict]) -> set[str]:
    """The articles the checkpointed ``outputs`` decided (an article's decision names it in its change)."""
    return {o["change"]["article_id"] for o in outputs if o["change"].get("article_id")}


def advance_in_steps(
    writer,
    until: int,
    advance: Callable[[int], list],
    step: int,
    after: Callable[[list], None],
    due_in: Callable[[], float] | None = None,
):
    """``advance(until)`` in steps of at most ``step`` queued articles (see the module docstring); ``after(outputs)``
    is called with the outputs of each step, in order (the checkpoint). ``due_in()``: seconds until the next
    checkpoint is due; each step after the first is sized to end about then, from the rate of the step before.
    Yields each step's outputs once ``after`` has seen them: a generator, so the caller emits them before the next
    step is decided and no list of the whole run's outputs is held (O(history): ~18 KB an article in a month_sim
    run)."""
    queued = [f.first_seen_at for f in writer.queued() if f.first_seen_at <= until]
    i, rate = 0, None  # the next step's first queued article; articles per second of the last step
    while True:
        n = step if due_in is None else _step_size(step, rate, due_in())
        j = i + n
        # a bound inside one millisecond's articles decides none of them: the step ends at the next time instead
        while j < len(queued) and queued[j] == queued[j - 1]:
            j += 1
        bound = until if j >= len(queued) else min(queued[j] - 1, until)
        started = _clock()
        made = advance(bound)
        rate = (j - i) / max(_clock() - started, 1e-6)
        after(made)
        yield made
        i = j
        if j >= len(queued):
            return


def _step_size(step: int, rate: float | None, due_in_s: float) -> int:
    """Articles to decide before the next chance to checkpoint: MIN_STEP before a rate is measured or when a checkpoint
    follows every step, else as many as ``rate`` decides in ``due_in_s`` (at least one); at most ``step``."""
    if rate is None or due_in_s <= 0:
        return min(MIN_STEP, step)
    return max(1, min(step, math.ceil(rate * due_in_s)))
