"""The pattern ingester: tenant -> stream -> miner, and the patterns query across streams."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from svclog.logql.engine.guard import QueryGuard
from svclog.model import Labels, Matcher, StreamColumns, ValidationError, labels_match
from svclog.pattern.samples import to_pairs
from svclog.pattern.stream import PatternSettings, StreamMiner


class TenantPatterns:
    def __init__(self, settings: PatternSettings):
        self.settings = settings
        self.streams: dict[Labels, StreamMiner] = {}

    def push(self, streams: Iterable[StreamColumns], now_ns: int, weight: int = 1) -> int:
        counted = 0
        for stream in streams:
            miner = self.streams.get(stream.labels)
            if miner is None:
                miner = self.streams[stream.labels] = StreamMiner(stream.labels, self.settings)
            counted += miner.push(stream.ts, stream.lines, now_ns, weight)
        return counted

    def collect(
        self, matchers: list[Matcher], start_ns: int, end_ns: int, step_ns: int, guard: QueryGuard | None = None
    ) -> dict[str, dict[int, int]]:
        into: dict[str, dict[int, int]] = {}
        for labels, miner in self.streams.items():
            if guard is not None:
                guard.check()  # past the query's deadline, or cancelled: stop between streams
            if labels_match(labels, matchers):
                miner.collect(into, start_ns, end_ns, step_ns)
        return into

    def drop_idle(self, now_ns: int) -> int:
        idle = [k for k, m in self.streams.items() if now_ns - m.last_push_ns > self.settings.retain_for_ns]
        for key in idle:
            del self.streams[key]
        return len(idle)


class PatternIngester:
    """Plain component (no Ray): the pattern actor hosts one."""

    def __init__(self, settings: PatternSettings | None = None, clock: Callable[[], int] = time.time_ns):
        self.settings = settings or PatternSettings()
        self.clock = clock
        self.tenants: dict[str, TenantPatterns] = {}

    def push(self, tenant: str, streams: Iterable[StreamColumns], weight: int = 1) -> int:
        """Mine a push (each line standing for `weight` lines); returns the number of lines counted."""
        instance = self.tenants.get(tenant)
        if instance is None:
            instance = self.tenants[tenant] = TenantPatterns(self.settings)
        return instance.push(streams, self.clock(), weight)

    def patterns(
        self,
        tenant: str,
        matchers: list[Matcher],
        start_ns: int,
        end_ns: int,
        step_ns: int = 0,
        guard: QueryGuard | None = None,
    ) -> list[dict]:
        """Patterns of the matching streams with `[seconds, count]` samples per step, most frequent first.

        A step below the sample interval is raised to it; buckets start at multiples of the step.
        """
        if end_ns < start_ns:
            raise ValidationError("end timestamp must not be before start time")
        step_ns = max(step_ns, self.settings.sample_interval_ns)
        instance = self.tenants.get(tenant)
        if instance is None:
            return []
        merged = instance.collect(list(matchers), start_ns, end_ns, step_ns, guard)
        ranked = sorted(merged.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
        return [{"pattern": pattern, "samples": to_pairs(counts)} for pattern, counts in ranked]

    def drop_idle(self) -> int:
        """Forget streams without a push for `retain_for` (wall clock); returns how many."""
        now = self.clock()
        dropped = 0
        for tenant in list(self.tenants):
            dropped += self.tenants[tenant].drop_idle(now)
            if not self.tenants[tenant].streams:
                del self.tenants[tenant]
        return dropped

    def stats(self) -> dict:
        streams = [m for t in self.tenants.values() for m in t.streams.values()]
        return {
            "tenants": len(self.tenants),
            "streams": len(streams),
            "clusters": sum(len(m.drain) for m in streams),
            "evicted_clusters": sum(m.drain.evicted for m in streams),
            "skipped_lines": sum(m.skipped_lines for m in streams),
        }


def merge_tenants(answers: list[list[dict]]) -> list[dict]:
    """One answer for a multi-tenant read, as the reference merges its tenants' answers: a pattern
    found in several has their samples together, ordered by time (equal times are kept apart)."""
    if len(answers) == 1:
        return answers[0]
    merged: dict[str, list[list[int]]] = {}
    for answer in answers:
        for series in answer:
            merged.setdefault(series["pattern"], []).extend(series["samples"])
    ranked = sorted(merged.items(), key=lambda kv: (-sum(count for _, count in kv[1]), kv[0]))
    return [{"pattern": pattern, "samples": sorted(samples, key=lambda s: s[0])} for pattern, samples in ranked]
