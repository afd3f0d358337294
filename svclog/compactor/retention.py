"""Retention: per-tenant `retention_period` and `retention_stream` rules applied to stored chunks.

The rule for a stream is the matching `retention_stream` entry with the highest priority
(on equal priority the shortest period), else the tenant's `retention_period`; a period
of 0 keeps the stream forever. Chunks that end before the cutoff leave the index (and,
after the delete delay, the store); a chunk straddling the cutoff is rewritten without
its expired entries.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache

import pyarrow.compute as pc

from svclog.compactor.chunks import ChunkIO
from svclog.compactor.tenant_index import TenantIndex
from svclog.config import LimitsConfig
from svclog.logql.parser import parse_selector
from svclog.model import Labels, Matcher, SvcError, labels_match
from svclog.storage import schema

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetentionRule:
    matchers: tuple[Matcher, ...]
    priority: int
    period: int  # ns


@lru_cache(maxsize=256)
def _selector_matchers(selector: str) -> tuple[Matcher, ...] | None:
    try:
        return tuple(parse_selector(selector).matchers)
    except SvcError as err:
        log.warning("ignoring retention_stream selector %r: %s", selector, err)
        return None


def retention_rules(limits: LimitsConfig) -> list[RetentionRule]:
    rules = []
    for stream in limits.retention_stream:
        matchers = _selector_matchers(stream.selector)
        if matchers is not None:
            rules.append(RetentionRule(matchers, stream.priority, stream.period))
    return rules


def retention_period_for(labels: Labels, default_period: int, rules: list[RetentionRule]) -> int:
    chosen: RetentionRule | None = None
    for rule in rules:
        if not labels_match(labels, rule.matchers):
            continue
        if (
            chosen is None
            or rule.priority > chosen.priority
            or (rule.priority == chosen.priority and rule.period < chosen.period)
        ):
            chosen = rule
    return chosen.period if chosen is not None else default_period


@dataclass
class RetentionResult:
    chunks_deleted: int = 0
    chunks_trimmed: int = 0
    entries_removed: int = 0


def apply_retention(index: TenantIndex, chunks: ChunkIO, limits: LimitsConfig, now_ns: int) -> RetentionResult:
    """Edit `index` (not yet committed) so no entry older than its stream's cutoff remains."""
    result = RetentionResult()
    rules = retention_rules(limits)
    periods = [p for p in [limits.retention_period, *(r.period for r in rules)] if p > 0]
    if not periods:
        return result
    earliest_cutoff = now_ns - min(periods)
    seen: set[str] = set()
    for day in index.days():
        if day * schema.PERIOD_NS >= earliest_cutoff:
            break
        for ref in index.refs_in(day):
            if ref.key in seen:
                continue
            seen.add(ref.key)
            period = retention_period_for(ref.labels, limits.retention_period, rules)
            if period <= 0 or ref.min_ts >= now_ns - period:
                continue
            cutoff = now_ns - period
            if ref.max_ts < cutoff:
                index.replace([ref], [])
                result.chunks_deleted += 1
                result.entries_removed += ref.entries
                continue
            table = chunks.read(ref)
            if table is None:
                index.replace([ref], [])
                continue
            kept = table.filter(pc.greater_equal(table.column("ts"), cutoff))
            index.replace([ref], [chunks.write(index.tenant, ref.labels, kept, ref.sealed_ns)] if kept.num_rows else [])
            result.chunks_trimmed += 1
            result.entries_removed += table.num_rows - kept.num_rows
    return result
