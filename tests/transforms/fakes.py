"""Fake Beam user state and timers, for driving stateful DoFns and transforms/timers.py directly in tests."""

from __future__ import annotations


class Bag:
    def __init__(self):
        self.items = []

    def add(self, v):
        self.items.append(v)

    def read(self):
        return list(self.items)

    def clear(self):
        self.items = []


class Value:
    def __init__(self, v=None):
        self.v = v

    def read(self):
        return self.v

    def write(self, v):
        self.v = v

    def clear(self):
        self.v = None


class Timer:
    """``at``: the time (ms) it is set for, None when cleared; ``sets``: every time it was set, in order."""

    def __init__(self):
        self.at = None
        self.sets = []

    def set(self, ts):
        self.at = ts.micros // 1000
        self.sets.append(self.at)

    def clear(self):
        self.at = None
