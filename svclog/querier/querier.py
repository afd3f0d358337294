"""Querier: runs LogQL and metadata requests for one or more tenants over a StoreSource."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from svclog.chunk.pushdown import block_probe
from svclog.logql import ast
from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.guard import QueryGuard, QueryLimits
from svclog.logql.engine.json_codec import result_to_json
from svclog.logql.engine.params import QueryParams
from svclog.logql.engine.result import QueryResult
from svclog.logql.parser import parse, parse_selector
from svclog.logql.rewrite.subquery import ShardedSource, SubQuery
from svclog.logql.source import SourceStats
from svclog.model import Labels, Matcher, Span, ValidationError, merge_spans
from svclog.querier.prefetched import Prefetched, PrefetchedIngesters
from svclog.querier.request import RangeRequest
from svclog.querier.source import DeleteFilters, IndexLookups, IngesterReader, StoreSource
from svclog.querier.stats import build_stats
from svclog.querier.volume import VolumeRequest, index_stats, volumes
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import listing_snapshot


@dataclass(frozen=True)
class QuerierSettings:
    query_ingesters_within: int = 3 * 3600 * 1_000_000_000
    max_entries_limit_per_query: int = 5000
    max_query_series: int = 500
    max_query_memory_bytes: int = 0  # when the caller gives no guard (0: unlimited)


class Querier:
    def __init__(
        self,
        index: IndexLookups,
        chunks: ChunkStore,
        ingesters: IngesterReader | None,
        settings: QuerierSettings,
        deletes: DeleteFilters | None = None,
    ):
        self.index = index
        self.chunks = chunks
        self.ingesters = ingesters
        self.settings = settings
        self.deletes = deletes

    def _source(
        self, tenants: list[str], guard: QueryGuard | None = None, prefetched: Prefetched | None = None
    ) -> StoreSource:
        ingesters = self.ingesters
        if prefetched is not None and ingesters is not None:
            ingesters = PrefetchedIngesters(prefetched, ingesters)
        return StoreSource(
            tenants,
            self.index,
            self.chunks,
            ingesters,
            query_ingesters_within=self.settings.query_ingesters_within,
            deletes=self.deletes,
            guard=guard,
        )

    def query(
        self,
        tenants: list[str],
        request: RangeRequest,
        queue_seconds: float = 0.0,
        limits: QueryLimits | None = None,
        guard: QueryGuard | None = None,
    ) -> dict:
        """query or query_range in one piece: the `data` object of the response, stats included."""
        expr, params = prepare_query(request, self.settings.max_entries_limit_per_query)
        began = time.perf_counter()
        if guard is None and limits is not None:
            guard = limits.guard()
        partial = self.execute(tenants, SubQuery(expr, params), guard)
        data = result_to_json(partial.result)
        data["stats"] = build_stats(partial.stats, time.perf_counter() - began, queue_seconds)
        return data

    def execute(
        self,
        tenants: list[str],
        sub: SubQuery,
        guard: QueryGuard | None = None,
        prefetched: Prefetched | None = None,
    ) -> PartialResult:
        """One sub-query (a time piece and/or shard of a query) over store and ingesters; `guard`
        stops it at its deadline, on cancellation or past its memory budget. `prefetched`: the
        ingesters' rows `read_facts` brought, answering the selects they cover."""
        guard = guard if guard is not None else QueryGuard(memory_limit=self.settings.max_query_memory_bytes)
        source = self._source(tenants, guard, prefetched)
        shard_source = ShardedSource(source, sub.shard) if sub.shard else source
        with listing_snapshot():  # one index LIST per day for the whole sub-query, however it reads
            result = evaluate(
                sub.expr, sub.params, shard_source, max_series=self.settings.max_query_series, guard=guard
            )
        return PartialResult(result, source.stats)

    def data_spans(self, tenants: list[str], start: int, end: int) -> list[Span] | None:
        """The time spans within [start, end] (inclusive) where the tenants hold entries: the
        index's chunks and the ingesters' streams. None when the ingesters cannot tell."""
        ingester_spans = getattr(self.ingesters, "data_spans", None)
        if self.ingesters is not None and ingester_spans is None:
            return None
        spans: list[Span] = []
        with listing_snapshot():
            for tenant in tenants:
                for refs in self.index.chunk_refs(tenant, (), start, end + 1).values():
                    spans.extend((ref.min_ts, ref.max_ts) for ref in refs)
                if ingester_spans is not None:
                    spans.extend(ingester_spans(tenant))
        return merge_spans(spans)

    # Metadata requests take the guard of their call: its deadline and cancellation stop them
    # between index lookups and chunks, as they stop a query.

    def series(
        self, tenants: list[str], selectors: list[str], start: int, end: int, guard: QueryGuard | None = None
    ) -> list[dict]:
        source = self._source(tenants, guard)
        found: set[Labels] = set()
        # no match[]: every series of the range, as the reference answers
        for matchers in [_matchers(text) for text in selectors] or [()]:
            found.update(source.select_series(matchers, start, end))
        return [labels.to_dict() for labels in sorted(found)]

    def index_stats(
        self, tenants: list[str], query: str, start: int, end: int, guard: QueryGuard | None = None
    ) -> dict:
        return index_stats(self.index, self.ingesters, tenants, _matchers(query), start, end, guard)

    def read_sizes(
        self,
        tenants: list[str],
        windows: list[tuple[tuple[Matcher, ...], int, int]],
        guard: QueryGuard | None = None,
    ) -> list[tuple[int, int]]:
        """(chunks, bytes) the index and the ingesters hold for each (matchers, from, through):
        what a query's selectors would read, known before any chunk is fetched (read budgets)."""
        return [(read.chunks, read.bytes) for read in self._window_reads(tenants, windows, guard)]

    def _window_reads(
        self,
        tenants: list[str],
        windows: list[tuple[tuple[Matcher, ...], int, int]],
        guard: QueryGuard | None = None,
        rows: _RowsWithStats | None = None,
        filters: Sequence[tuple] = (),
    ) -> list[WindowRead]:
        """`read_sizes` of each window and, where `filters` gives the window's leading line
        filters, the bytes left once the token index rules out the chunks that cannot hold a
        line they keep (`WindowRead.probed_bytes`). With `rows`, the ingesters also send the rows
        of a window while the query, so far, reads little after the token index (they go to
        `rows.prefetched`)."""
        reads = []
        with listing_snapshot():  # one index LIST per day for all the windows
            for position, (matchers, start, end) in enumerate(windows):
                line_filters = filters[position] if position < len(filters) else ()
                # the index's part first: rows are asked only while the query stays small
                read = self._index_read(tenants, matchers, start, end, line_filters, guard)
                if rows is not None:
                    rows.spent += read.probed_bytes
                for tenant in tenants:
                    if guard is not None:
                        guard.check()
                    if rows is not None:
                        found = rows.stats(tenant, matchers, start, end)
                    elif self.ingesters is not None:
                        found = cast(Any, self.ingesters).stats(tenant, matchers, start, end)
                    else:
                        found = []
                    read = read.plus_ingesters(sum(row[3] for row in found), sum(row[2] for row in found))
                reads.append(read)
        return reads

    def _index_read(
        self,
        tenants: list[str],
        matchers: tuple[Matcher, ...],
        start: int,
        end: int,
        line_filters: tuple,
        guard: QueryGuard | None,
    ) -> WindowRead:
        """The index's part of a window's read: its chunks and their bytes, and the bytes of the
        blocks the token index leaves of them (the chunk store's known layouts: chunk/pushdown.py)."""
        probe = block_probe(line_filters) if line_filters else None
        chunks = size = probed = 0
        for tenant in tenants:
            if guard is not None:
                guard.check()
            refs = [
                ref for chunk_refs in self.index.chunk_refs(tenant, matchers, start, end).values() for ref in chunk_refs
            ]
            total = sum(ref.bytes for ref in refs)
            chunks += len(refs)
            size += total
            if probe is not None and refs:  # the blocks it leaves of each chunk
                shares = self.chunks.kept_share(refs, start, end, probe)
                probed += int(sum(ref.bytes * share for ref, share in zip(refs, shares.tolist())))
            else:
                probed += total
        return WindowRead(chunks, size, probed)

    def read_facts(
        self,
        tenants: list[str],
        window: tuple[int, int] | None,
        windows: list[tuple[tuple[Matcher, ...], int, int]],
        guard: QueryGuard | None = None,
        rows_cap: int = 0,
        rows_pad: int = 0,
        filters: Sequence[tuple] = (),
    ) -> ReadFacts:
        """What the frontend learns before it sends a query's sub-queries, in one call: where the
        tenants hold data within `window` (None: not asked, or unknown), what `windows` read (their
        budgets; with `filters`, each window's leading line filters, also what they read once the
        token index has ruled chunks out) and, with `rows_cap`, the ingesters' rows of the windows
        that read little (`rows_pad`: the query's step, by which a metric query's evaluation times
        reach past its range)."""
        prefetched = Prefetched()
        if rows_cap > 0 and hasattr(self.ingesters, "stats_and_rows"):
            rows = _RowsWithStats(self.ingesters, rows_cap, rows_pad, prefetched, guard)
        else:
            rows = None
        if window is None or not windows:
            spans = self.data_spans(tenants, *window) if window is not None else None
            return ReadFacts(spans, self._window_reads(tenants, windows, guard, rows, filters), prefetched)
        # both wait on the ingesters (Ray calls, the GIL released): one round trip, not two
        pending = _FACTS_POOL.submit(self.data_spans, tenants, *window)
        reads = self._window_reads(tenants, windows, guard, rows, filters)
        return ReadFacts(pending.result(), reads, prefetched)

    def volume(
        self,
        tenants: list[str],
        query: str,
        start: int,
        end: int,
        limit: int,
        target_labels: tuple[str, ...],
        aggregate_by: str,
        step: int | None,
        guard: QueryGuard | None = None,
    ) -> dict:
        request = VolumeRequest(_matchers(query), start, end, limit, target_labels, aggregate_by, step)
        return volumes(self._source(tenants, guard), request)

    def label_names(
        self, tenants: list[str], start: int, end: int, query: str | None, guard: QueryGuard | None = None
    ) -> list[str]:
        series = self._series_for(tenants, start, end, query, guard)
        return sorted({name for labels in series for name in labels.names()})

    def label_values(
        self, tenants: list[str], name: str, start: int, end: int, query: str | None, guard: QueryGuard | None = None
    ) -> list[str]:
        series = self._series_for(tenants, start, end, query, guard)
        return sorted({v for labels in series if (v := labels.get(name)) is not None})

    def _series_for(
        self, tenants: list[str], start: int, end: int, query: str | None, guard: QueryGuard | None = None
    ) -> list[Labels]:
        matchers = _matchers(query) if query else ()
        return list(self._source(tenants, guard).select_series(matchers, start, end))


_FACTS_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="read-facts")


class WindowRead(NamedTuple):
    """What one window of a query reads (store and ingesters), known before any chunk is read."""

    chunks: int
    bytes: int
    probed_bytes: int  # once the token index has ruled out chunks (the ingesters' bytes whole)

    def plus_ingesters(self, chunks: int, size: int) -> WindowRead:
        return WindowRead(self.chunks + chunks, self.bytes + size, self.probed_bytes + size)


class ReadFacts(NamedTuple):
    spans: list[Span] | None  # where the tenants hold data (None: not asked, or unknown)
    reads: list[WindowRead]  # of each window asked
    prefetched: Prefetched  # the ingesters' rows of the windows that read little


class _RowsWithStats:
    """The ingesters' stats calls of one planning read, each bringing the window's rows too (into
    `prefetched`) while the query reads at most `rows_cap` so far (`spent`): one round trip for
    a small query's plan and select."""

    def __init__(self, ingesters: Any, rows_cap: int, rows_pad: int, prefetched: Prefetched, guard: QueryGuard | None):
        self.ingesters = ingesters
        self.rows_cap = rows_cap
        self.rows_pad = rows_pad
        self.prefetched = prefetched
        self.guard = guard
        self.spent = 0  # line bytes the query reads, as far as known

    def stats(self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int) -> list:
        """(labels, entries, bytes, chunks) of the ingesters' streams, as `IngesterPool.stats`."""
        guard = self.guard
        if guard is not None:
            guard.check()
        left = self.rows_cap - self.spent
        if left <= 0:  # too large for the lane already: the stats alone
            return self.ingesters.stats(tenant, matchers, start, end)
        cancellable = getattr(self.ingesters, "cancellable", False)
        # the rows the window's selects read: a range aggregation's evaluation times are aligned
        # to its step (the pad), and its select ends one past the last (exclusive)
        pad = self.rows_pad
        stats, rows = self.ingesters.stats_and_rows(
            tenant,
            matchers,
            start,
            end,
            left,
            (start - pad, end + pad + 1),
            deadline=guard.deadline if guard is not None else None,
            **({"on_cancel": guard.on_cancel} if guard is not None and cancellable else {}),
        )
        if rows is not None:
            self.prefetched.add(rows)
        self.spent += sum(row[2] for row in stats)
        return stats


@dataclass
class PartialResult:
    result: QueryResult
    stats: SourceStats


def prepare_query(request: RangeRequest, max_entries_limit: int) -> tuple[ast.Expr, QueryParams]:
    """Parse and check a request the way the reference does before running it."""
    expr = parse(request.query)
    if request.instant and ast.is_log_query(expr):
        raise ValidationError(
            "log queries are not supported as an instant query type, please change your query to a range query type"
        )
    if ast.is_log_query(expr) and request.limit > max_entries_limit > 0:
        raise ValidationError(
            f"max entries limit per query exceeded, limit > max_entries_limit ({request.limit} > {max_entries_limit})"
        )
    params = QueryParams(
        start=request.start,
        end=request.end,
        step=request.step,
        interval=request.interval,
        limit=request.limit,
        direction=request.direction,
        instant=request.instant,
        categorize_labels=request.categorize_labels and ast.is_log_query(expr),
    )
    return expr, params


def _matchers(text: str) -> tuple[Matcher, ...]:
    return tuple(parse_selector(text).matchers)
