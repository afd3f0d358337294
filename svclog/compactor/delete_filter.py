"""DeleteFilter: which entries a delete request removes, evaluated column-wise with pyarrow.

Used twice: by queriers, so deleted lines vanish from results as soon as a request is
stored (`pending_delete_filters`, `QueryTimeDeletes`), and by the compactor when it
rewrites chunks. Every stored request counts, processed ones too: entries still held by
ingesters when a shard was processed are flushed later and must stay hidden.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc

from svclog.compactor.delete_requests import MS, DeleteRequest, DeleteRequestStore, parse_delete_query
from svclog.logql import ast
from svclog.logql.source import StreamBlock
from svclog.logql.stages.line_filter import line_filter_mask
from svclog.model import Labels, Matcher, SvcError, labels_match


@dataclass(frozen=True)
class DeleteFilter:
    matchers: tuple[Matcher, ...]
    line_filters: tuple[ast.LineFilter, ...]
    start: int  # ns, inclusive
    end: int  # ns, inclusive

    def matches_stream(self, labels: Labels) -> bool:
        return labels_match(labels, self.matchers)

    def overlaps(self, min_ts: int, max_ts: int) -> bool:
        return min_ts <= self.end and max_ts >= self.start

    def mask(self, ts: pa.Array, line: pa.Array) -> pa.Array:
        """True for each entry this filter deletes (the stream is assumed to match)."""
        hit = pc.and_(pc.greater_equal(ts, self.start), pc.less_equal(ts, self.end))
        for node in self.line_filters:
            hit = pc.and_(hit, line_filter_mask(node, line))
        return pc.fill_null(hit, False)


@lru_cache(maxsize=1024)
def _parsed(query: str) -> tuple[tuple[Matcher, ...], tuple[ast.LineFilter, ...]] | None:
    try:
        parsed = parse_delete_query(query)
    except SvcError:
        return None  # validated when stored; an unparsable record deletes nothing
    return tuple(parsed.selector.matchers), tuple(s for s in parsed.stages if isinstance(s, ast.LineFilter))


def filters_for(request: DeleteRequest, statuses: tuple[str, ...] | None = None) -> list[DeleteFilter]:
    """One filter per shard (optionally only shards in the given statuses)."""
    parsed = _parsed(request.query)
    if parsed is None:
        return []
    base = DeleteFilter(parsed[0], parsed[1], 0, 0)
    return [
        replace(base, start=s.start_ms * MS, end=s.end_ms * MS)
        for s in request.shards
        if statuses is None or s.status in statuses
    ]


def shard_filter(request: DeleteRequest, seq: int) -> DeleteFilter | None:
    parsed = _parsed(request.query)
    for shard in request.shards:
        if shard.seq == seq and parsed is not None:
            return DeleteFilter(parsed[0], parsed[1], shard.start_ms * MS, shard.end_ms * MS)
    return None


def pending_delete_filters(requests: DeleteRequestStore, tenant: str) -> list[DeleteFilter]:
    """Every stored (not cancelled) request's filters for the tenant."""
    return [f for request in requests.list(tenant) for f in filters_for(request)]


def deleted_mask(filters: list[DeleteFilter], labels: Labels, ts: pa.Array, line: pa.Array) -> pa.Array | None:
    """True where any filter deletes the entry; None when no filter applies to this stream."""
    mask = None
    if len(ts) == 0:
        return None
    lo, hi = pc.min_max(ts).values()
    for f in filters:
        if not f.overlaps(lo.as_py(), hi.as_py()) or not f.matches_stream(labels):
            continue
        hit = f.mask(ts, line)
        mask = hit if mask is None else pc.or_(mask, hit)
    return mask


def apply_to_table(filters: list[DeleteFilter], labels: Labels, table: pa.Table) -> pa.Table:
    """The table (columns `ts`, `line`, ...) without the entries the filters delete."""
    if not filters or table.num_rows == 0:
        return table
    mask = deleted_mask(filters, labels, table.column("ts"), table.column("line"))
    return table if mask is None else table.filter(pc.invert(mask))


def apply_to_block(filters: list[DeleteFilter], block: StreamBlock) -> StreamBlock:
    if not filters or len(block) == 0:
        return block
    mask = deleted_mask(filters, block.labels, block.ts, block.line)
    if mask is None:
        return block
    keep = pc.invert(mask)
    metadata = None if block.metadata is None else block.metadata.filter(keep)
    return StreamBlock(block.labels, block.ts.filter(keep), block.line.filter(keep), metadata)


class QueryTimeDeletes:
    """The querier's view of delete requests: filters per tenant, re-read at most every `max_age_s`.

    max_age_s=0 (the default) reads the tenant's requests on every query, so a request is
    honoured by the very next query; a list of a missing prefix is all a tenant without
    requests costs.
    """

    def __init__(self, requests: DeleteRequestStore, max_age_s: float = 0.0):
        self.requests = requests
        self.max_age_s = max_age_s
        self._cache: dict[str, tuple[float, list[DeleteFilter]]] = {}
        self._lock = threading.Lock()

    def filters(self, tenant: str) -> list[DeleteFilter]:
        now = time.monotonic()
        if self.max_age_s > 0:
            with self._lock:
                cached = self._cache.get(tenant)
            if cached is not None and now - cached[0] < self.max_age_s:
                return cached[1]
        found = pending_delete_filters(self.requests, tenant)
        if self.max_age_s > 0:
            with self._lock:
                self._cache[tenant] = (now, found)
        return found

    def table_filter(self, tenant: str) -> Callable[[Labels, pa.Table], pa.Table] | None:
        """A function removing deleted entries from one stream's table; None when nothing is deleted."""
        filters = self.filters(tenant)
        if not filters:
            return None
        return lambda labels, table: apply_to_table(filters, labels, table)
