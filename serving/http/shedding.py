"""Load shedding for the private endpoints: For you is shed first, so shared pages keep answering.

A bounded number of private requests run at once per process (``max_inflight``); a few more may wait
(``max_waiting``) for at most ``wait_s``; everything beyond is answered 503 with Retry-After at once, costing
microseconds. With gunicorn gthread workers the same threads serve shared pages, so ``max_inflight +
max_waiting`` is kept below the thread count: shared requests always find a free thread (they hold it for
~0.1 ms and need no slot).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager


class Overloaded(Exception):
    """No private slot free within the wait budget."""


class Shedder:
    def __init__(self, max_inflight: int = 2, max_waiting: int = 2, wait_s: float = 0.05):
        self._slots = threading.BoundedSemaphore(max_inflight)
        self._lock = threading.Lock()
        self._waiting = 0
        self.max_waiting = max_waiting
        self.wait_s = wait_s
        self.shed = 0

    @contextmanager
    def slot(self):
        if not self._slots.acquire(blocking=False):
            with self._lock:
                if self._waiting >= self.max_waiting:
                    self.shed += 1
                    raise Overloaded()
                self._waiting += 1
            try:
                got = self._slots.acquire(timeout=self.wait_s)
            finally:
                with self._lock:
                    self._waiting -= 1
            if not got:
                with self._lock:
                    self.shed += 1
                raise Overloaded()
        try:
            yield
        finally:
            self._slots.release()
