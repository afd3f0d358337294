"""Ingester rows read with a small query's planning read, served to its selects.

The query frontend learns what a query reads before it runs it: the index's sizes and the
ingesters' (one round trip to every ingester). For a query that reads little the same call also
brings the ingesters' rows of the query's selectors (Ingester.stats_and_rows), and the query's
selects are answered from them instead of a second round trip; under load each round trip
cost ~4x its idle time (docs/architecture.md, session 27).

The rows are a snapshot taken before the index is listed, as a select's own are: a chunk flushed
in between is read from both and its repeats dropped (StoreSource._merged).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.pushdown import apply_line_filters
from svclog.logql.source import IngesterScan
from svclog.model import Labels, Matcher


@dataclass(frozen=True)
class IngesterRows:
    """Every ingester's entries of one selector's streams in [start, end)."""

    tenant: str
    matchers: tuple[Matcher, ...]
    start: int  # ns, inclusive
    end: int  # ns, exclusive
    streams: list[tuple[Labels, pa.Table]]
    reached: int  # ingesters that answered
    covered: frozenset[str] = frozenset()  # store keys of flushed chunks the rows hold copies of

    def covers(self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int) -> bool:
        return tenant == self.tenant and matchers == self.matchers and self.start <= start and end <= self.end


def rows_of(
    tenant: str, matchers: tuple[Matcher, ...], start: int, end: int, answers: Sequence[Any | None], asked: int
) -> IngesterRows | None:
    """The rows of every asked ingester's answer (a PackedStreams of [start, end), or None when
    it holds too many to send): None unless each of them answered with its rows."""
    packs = [packed for packed in answers if packed is not None]
    if len(packs) < asked:
        return None
    streams = [item for packed in packs for item in packed.unpack()]  # decodes packed blocks
    covered = frozenset().union(*(packed.covered for packed in packs))
    return IngesterRows(tenant, matchers, start, end, streams, len(packs), covered)


@dataclass
class Prefetched:
    """The rows a query's planning read brought, by selector."""

    rows: list[IngesterRows] = field(default_factory=list)

    def add(self, rows: IngesterRows) -> None:
        self.rows.append(rows)

    def find(self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int) -> IngesterRows | None:
        return next((r for r in self.rows if r.covers(tenant, matchers, start, end)), None)


class PrefetchedIngesters:
    """An IngesterReader (svclog/querier/source.py) answering a select from prefetched rows when
    they cover it (same tenant and selector, a window within theirs, the first page), else asking
    `ingesters`. Answers are those a select would give: the window's rows of the shard's streams,
    line filters applied where `ingesters` applies them."""

    def __init__(self, prefetched: Prefetched, ingesters: Any):
        self.prefetched = prefetched
        self.ingesters = ingesters
        self.pages = getattr(ingesters, "pages", False)
        self.cancellable = getattr(ingesters, "cancellable", False)
        self.applies_line_filters = getattr(ingesters, "applies_line_filters", False)

    def select(
        self,
        tenant: str,
        matchers: tuple[Matcher, ...],
        start: int,
        end: int,
        shard: tuple[int, int] | None,
        line_filters: tuple = (),
        deadline: float | None = None,
        **more: Any,
    ) -> tuple:
        rows = self.prefetched.find(tenant, tuple(matchers), start, end)
        if rows is None or more.get("after") is not None:
            return self.ingesters.select(tenant, matchers, start, end, shard, line_filters, deadline, **more)
        found, scanned, scanned_bytes = [], 0, 0
        for labels, table in _in_shard(rows.streams, shard):
            ts = table.column("ts")
            if table.num_rows and (pc.min(ts).as_py() < start or pc.max(ts).as_py() >= end):
                table = table.filter(pc.and_(pc.greater_equal(ts, start), pc.less(ts, end)))
            scanned += table.num_rows
            scanned_bytes += pc.sum(pc.binary_length(table.column("line"))).as_py() or 0
            if self.applies_line_filters and line_filters:
                table = apply_line_filters(table, line_filters)
            if table.num_rows:
                found.append((labels, table))
        return found, rows.reached, IngesterScan(head_lines=scanned, head_bytes=scanned_bytes), None, rows.covered

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ingesters, name)  # series, data_spans, stats: the ingesters themselves


def _in_shard(
    streams: Iterable[tuple[Labels, pa.Table]], shard: tuple[int, int] | None
) -> Iterable[tuple[Labels, pa.Table]]:
    if shard is None:
        return streams
    index, count = shard
    return [(labels, table) for labels, table in streams if labels.fingerprint() % count == index]
