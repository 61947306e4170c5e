"""Beam counters behind the plain ``count(name, n)`` callables the editions logic takes (EditionRanker,
SnapshotPublisher, the control and takedown readers)."""

from __future__ import annotations

from apache_beam.metrics import Metrics


class Counters:
    """``count(name, n)`` over Beam counters of one namespace, made on first use; ``*_ms`` names are
    distributions."""

    def __init__(self, namespace: str):
        self.namespace = namespace
        self._made = {}

    def __call__(self, name: str, n: int = 1) -> None:
        m = self._made.get(name)
        if m is None:
            make = Metrics.distribution if name.endswith("_ms") else Metrics.counter
            m = self._made[name] = make(self.namespace, name)
        if name.endswith("_ms"):
            m.update(n)
        else:
            m.inc(n)
