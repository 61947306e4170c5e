"""An edition's unit centroids kept across its cycles: the page assembly's near-duplicate test reads the unit
centroid (float64) of every story a page can place (~1,000 per edition), and each cycle gathered, widened and
normalised all of them again (~2 ms per edition, 73 editions a cycle) though a story's centroid changes only when
its ``centroid_seq`` grows (``StoryBook._set_centroid``).

:class:`UnitCentroids` keeps them in slots of one matrix: a story row keeps its slot while it is asked for in
consecutive cycles at the same ``centroid_seq``; the rows asked for anew or with a newer centroid are computed
in one batch, and the slots of rows not asked for are freed. A row's unit vector is the same bits whichever batch
computes it (the norm reduces each row on its own, the division is element-wise), so a fresh or a restarted
worker's empty cache gives the same pages (tests/transforms/editions/test_unit_centroids.py). In-process only, in
the edition's :class:`~.context.CycleCache`: nothing in Beam state.
"""

from __future__ import annotations

import numpy as np

from transforms.editions.book.storybook import StoryBook


class UnitCentroids:
    """Per edition: slot -> (story row, centroid_seq, unit centroid, non-zero), story row -> slot (module docstring)."""

    def __init__(self) -> None:
        self.book: StoryBook | None = None
        self.slot_of = np.zeros(0, np.int64)  # story row -> slot + 1 (0: none)
        self.rows = np.zeros(0, np.int64)  # slot -> story row (-1: free)
        self.seq = np.zeros(0)  # slot -> the centroid_seq its vector was made at
        self.mat = np.zeros((0, 0))  # slot -> unit centroid (zeros for a zero centroid)
        self.nonzero = np.zeros(0, bool)
        self.last: tuple | None = None  # the last call's rows and centroid_seqs (bytes), slots and non-zero flags

    def of(self, book: StoryBook, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(matrix, slots, nonzero)``: ``matrix[slots[j]]`` is the unit centroid of story row ``rows[j]`` (unique
        rows; ``book.dim`` set), ``nonzero[j]`` whether its centroid is not all zeros. The matrix is this cache's
        (valid until its next call)."""
        seq = book.stories.centroid_seq[rows]
        last, asked = self.last, (rows.tobytes(), seq.tobytes())
        if last is not None and self.book is book and last[0] == asked and self.mat.shape[1] == book.dim:
            return self.mat, last[1], last[2]  # the same rows at the same seqs: every slot kept, none freed
        if self.book is not book or self.mat.shape[1] != book.dim:
            self.__init__()
            self.book, self.mat = book, np.zeros((0, book.dim))
        if self.slot_of.size < book.stories.size:
            grown = np.zeros(max(book.stories.size, 2 * self.slot_of.size), np.int64)
            grown[: self.slot_of.size] = self.slot_of
            self.slot_of = grown
        slots = self.slot_of[rows] - 1
        ok = slots >= 0
        ok[ok] = self.seq[slots[ok]] == seq[ok]
        kept = np.zeros(self.rows.size, bool)
        kept[slots[ok]] = True
        freed = ~kept & (self.rows >= 0)
        self.slot_of[self.rows[freed]] = 0
        self.rows[freed] = -1
        miss = np.flatnonzero(~ok)
        if miss.size:
            self._fill(book, rows[miss], seq[miss], slots, miss)
        self.last = (asked, slots, self.nonzero[slots])
        return self.mat, slots, self.last[2]

    def _fill(self, book: StoryBook, rows: np.ndarray, seq: np.ndarray, slots: np.ndarray, miss: np.ndarray) -> None:
        """Compute the unit centroids of ``rows`` into free slots (growing the matrix), recorded in ``slots[miss]``."""
        free = np.flatnonzero(self.rows < 0)
        if free.size < rows.size:
            cap = self.rows.size
            new_cap = max(2 * cap, cap + rows.size - free.size)
            mat = np.zeros((new_cap, self.mat.shape[1]))
            mat[:cap] = self.mat
            self.mat = mat
            self.rows = np.concatenate([self.rows, np.full(new_cap - cap, -1, np.int64)])
            self.seq = np.concatenate([self.seq, np.zeros(new_cap - cap)])
            self.nonzero = np.concatenate([self.nonzero, np.zeros(new_cap - cap, bool)])
            free = np.flatnonzero(self.rows < 0)
        new = free[: rows.size]
        cvec = book.stories.centroid[rows].astype(np.float64)
        norms = np.linalg.norm(cvec, axis=1)
        self.mat[new] = cvec / np.where(norms > 0, norms, 1.0)[:, None]
        self.nonzero[new] = norms > 0
        self.seq[new], self.rows[new] = seq, rows
        self.slot_of[rows] = new + 1
        slots[miss] = new
