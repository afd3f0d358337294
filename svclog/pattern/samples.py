"""Per-pattern line counts bucketed by a fixed interval, and re-bucketing by a query step."""

from __future__ import annotations

from collections.abc import Iterable

from svclog.model import NS


class Samples:
    """Counts per bucket start (ns, a multiple of `interval_ns`)."""

    __slots__ = ("counts", "interval_ns")

    def __init__(self, interval_ns: int):
        self.interval_ns = interval_ns
        self.counts: dict[int, int] = {}

    def add(self, ts_ns: int, n: int = 1) -> None:
        bucket = ts_ns - ts_ns % self.interval_ns
        self.counts[bucket] = self.counts.get(bucket, 0) + n

    def prune(self, cutoff_ns: int) -> None:
        """Drop buckets that end at or before `cutoff_ns`."""
        stale = [b for b in self.counts if b + self.interval_ns <= cutoff_ns]
        for bucket in stale:
            del self.counts[bucket]

    def __bool__(self) -> bool:
        return bool(self.counts)

    def window(self, start_ns: int, end_ns: int) -> Iterable[tuple[int, int]]:
        """Buckets overlapping [start_ns, end_ns)."""
        for bucket, count in self.counts.items():
            if bucket < end_ns and bucket + self.interval_ns > start_ns:
                yield bucket, count


def rebucket(into: dict[int, int], buckets: Iterable[tuple[int, int]], step_ns: int) -> None:
    """Add buckets to `into`, keyed by the step-aligned start of the step they fall in."""
    for bucket, count in buckets:
        key = bucket - bucket % step_ns
        into[key] = into.get(key, 0) + count


def to_pairs(counts: dict[int, int]) -> list[list[int | float]]:
    """[[seconds, count], ...] oldest first; whole seconds print as integers."""
    out: list[list[int | float]] = []
    for bucket in sorted(counts):
        seconds: int | float = bucket // NS if bucket % NS == 0 else bucket / NS
        out.append([seconds, counts[bucket]])
    return out
