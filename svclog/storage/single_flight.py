"""One load per key at a time: concurrent misses of the same key wait for the first one's request."""

from __future__ import annotations

import threading


class SingleFlight:
    """One lock per key being loaded: concurrent misses of the same key wait for one request."""

    def __init__(self):
        self._locks: dict[object, threading.Lock] = {}
        self._lock = threading.Lock()

    def gate(self, key: object) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(key, threading.Lock())

    def done(self, key: object) -> None:
        with self._lock:
            self._locks.pop(key, None)
