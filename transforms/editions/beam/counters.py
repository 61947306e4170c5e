"""Beam counters behind the plain ``count(name, n)`` callables the editions logic takes (EditionRanker,
SnapshotPublisher, the control and takedown readers)."""

from __future__ import annotations

from apache_beam.metrics import Metrics


class Counters:
    """``count(name, n)`` over Beam counters of one namespace, made on first use; ``*_ms`` names are
    distributions, updated at once.

    Counts are summed here and handed to Beam by :meth:`flush`, which the DoFn calls in ``finish_bundle``: the
    same totals in the same bundle, one counter update per name and bundle instead of one per call (the ranker
    and the publisher count ~78,000 times over a month's replay, each update a metrics-container lookup)."""

    def __init__(self, namespace: str):
        self.namespace = namespace
        self._made = {}
        self._sums: dict[str, int] = {}

    def __call__(self, name: str, n: int = 1) -> None:
        if name.endswith("_ms"):
            self._metric(name).update(n)
        else:
            self._sums[name] = self._sums.get(name, 0) + n

    def flush(self) -> None:
        """Add the counts summed since the last flush to their Beam counters."""
        sums, self._sums = self._sums, {}
        for name, n in sums.items():
            self._metric(name).inc(n)

    def _metric(self, name: str):
        m = self._made.get(name)
        if m is None:
            make = Metrics.distribution if name.endswith("_ms") else Metrics.counter
            m = self._made[name] = make(self.namespace, name)
        return m
