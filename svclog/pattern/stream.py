"""One stream's pattern miner: a Drain tree whose clusters carry bucketed line counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from svclog.model import NS, Labels
from svclog.pattern.drain import Drain, DrainSettings
from svclog.pattern.samples import Samples, rebucket
from svclog.pattern.tokens import tokenize

_PRUNE_EVERY_NS = 60 * NS


@dataclass(frozen=True)
class PatternSettings:
    sample_interval_ns: int = 10 * NS
    retain_for_ns: int = 3 * 3600 * NS
    max_line_length: int = 3000
    drain: DrainSettings = field(default_factory=DrainSettings)


class StreamMiner:
    """Retention is measured from the newest entry of the stream, not the wall clock, so
    back-filled data is mined too; idle streams are dropped by the tenant (see ingester.py)."""

    def __init__(self, labels: Labels, settings: PatternSettings):
        self.labels = labels
        self.settings = settings
        self.drain = Drain(settings.drain)
        self.newest_ns: int | None = None
        self.last_push_ns = 0
        self.skipped_lines = 0
        self._pruned_at = 0

    def push(self, ts: list[int], lines: list[str], now_ns: int, weight: int = 1) -> int:
        """Mine the lines; return how many were counted (too long, wordless or expired ones are not).

        `weight`: how many real lines each given line stands for (the distributor samples).
        Lines without a word (empty, `}`, `***`) are skipped as the reference skips lines of
        too few tokens: they carry no message to find a pattern in.
        """
        self.last_push_ns = now_ns
        settings = self.settings
        counted = 0
        for t, line in zip(ts, lines):
            tokens = None if len(line) > settings.max_line_length else tokenize(line)
            if (
                tokens is None
                or not tokens.words
                or (self.newest_ns is not None and t <= self.newest_ns - settings.retain_for_ns)
            ):
                self.skipped_lines += 1
                continue
            cluster = self.drain.train(tokens)
            if cluster.samples is None:
                cluster.samples = Samples(settings.sample_interval_ns)
            cluster.samples.add(t, weight)
            if self.newest_ns is None or t > self.newest_ns:
                self.newest_ns = t
            counted += 1
        self._maybe_prune()
        return counted

    def _maybe_prune(self) -> None:
        if self.newest_ns is None or self.newest_ns - self._pruned_at < _PRUNE_EVERY_NS:
            return
        self._pruned_at = self.newest_ns
        cutoff = self.newest_ns - self.settings.retain_for_ns
        for cluster in self.drain.clusters():
            if cluster.samples is not None:
                cluster.samples.prune(cutoff)
                if not cluster.samples:
                    self.drain.remove(cluster)

    def collect(self, into: dict[str, dict[int, int]], start_ns: int, end_ns: int, step_ns: int) -> None:
        """Add this stream's counts in [start_ns, end_ns) to `into[pattern][step_start]`."""
        for cluster in self.drain.clusters():
            if cluster.samples is None:
                continue
            window = list(cluster.samples.window(start_ns, end_ns))
            if window:
                rebucket(into.setdefault(cluster.pattern, {}), window, step_ns)
