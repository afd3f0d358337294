"""Per-tenant token buckets for ingestion rate (bytes/s) with a burst allowance."""

from __future__ import annotations

import threading
import time


class TokenBucket:
    def __init__(self, rate: float, burst: float):
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.updated = time.monotonic()

    def allow(self, amount: float, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if amount <= self.tokens:
            self.tokens -= amount
            return True
        return False


class RateLimiter:
    def __init__(self) -> None:
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def allow(self, tenant: str, amount: float, rate: float, burst: float) -> bool:
        if rate <= 0:
            return True
        with self._lock:
            bucket = self._buckets.get(tenant)
            if bucket is None or bucket.rate != rate or bucket.burst != burst:
                bucket = self._buckets[tenant] = TokenBucket(rate, burst)
            return bucket.allow(amount, time.monotonic())
