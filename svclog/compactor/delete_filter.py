"""DeleteFilter: which entries a delete request removes, evaluated column-wise with pyarrow.

Used twice: by queriers, so deleted lines vanish from results once a request is stored
(`QueryTimeDeletes`: within DELETES_TTL_S, at once in the process that stored it), and by the compactor when it
rewrites chunks. Every stored request counts, processed ones too: entries still held by
ingesters when a shard was processed are flushed later and must stay hidden.
"""

from __future__ import annotations

import hashlib
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
from svclog.storage.single_flight import SingleFlight


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


# How long a querier reuses a tenant's listing of delete requests. The reference's queriers keep
# theirs for 5 minutes (the delete requests client's cache); a few seconds keep a new request's
# lag short while a query's sub-queries no longer each LIST the tenant's requests.
DELETES_TTL_S = 5.0


@dataclass(frozen=True)
class _TenantView:
    keys: tuple[str, ...]
    filters: list[DeleteFilter]
    listed_at: float  # the clock before the LIST
    generation: int  # this process's writes under the tenant's prefix when it was listed
    changed_at: float  # when this process first saw this set of requests


class QueryTimeDeletes:
    """The querier's view of delete requests: filters per tenant.

    A tenant's requests are listed at most once per `max_age_s` (and again at once after this
    process created or cancelled one of them), and each request is read once: what a filter
    takes from a request (query, shard bounds) never changes after it is stored. So a new or
    cancelled request shows in other processes' queries within `max_age_s`, as the reference's
    queriers show it within their cache's refresh. Concurrent misses of a tenant make one LIST.
    """

    def __init__(self, requests: DeleteRequestStore, max_age_s: float = DELETES_TTL_S, clock=time.monotonic):
        self.requests = requests
        self.max_age_s = max_age_s
        self._clock = clock
        self._views: dict[str, _TenantView] = {}
        self._bodies: dict[str, list[DeleteFilter]] = {}  # request key -> its filters
        self._lock = threading.Lock()
        self._loading = SingleFlight()
        self.listings_read = 0  # LISTs made (cache misses)

    def _fresh(self, tenant: str) -> _TenantView | None:
        with self._lock:
            view = self._views.get(tenant)
        if view is None or self._clock() - view.listed_at >= self.max_age_s:
            return None
        current = self.requests.store.generation(self.requests.prefix(tenant))
        return view if view.generation == current else None

    def _view(self, tenant: str) -> _TenantView:
        view = self._fresh(tenant)
        if view is not None:
            return view
        with self._loading.gate(tenant):
            try:
                view = self._fresh(tenant)  # listed by the caller this one waited for
                return view if view is not None else self._list(tenant)
            finally:
                self._loading.done(tenant)

    def _list(self, tenant: str) -> _TenantView:
        generation = self.requests.store.generation(self.requests.prefix(tenant))
        listed_at = self._clock()
        keys = tuple(self.requests.keys(tenant))
        filters: list[DeleteFilter] = []
        for key in keys:
            with self._lock:
                known = self._bodies.get(key)
            if known is None:
                try:
                    known = filters_for(self.requests.read(key))
                except FileNotFoundError:
                    continue  # cancelled between list and read
                with self._lock:
                    self._bodies[key] = known
            filters.extend(known)
        with self._lock:
            before = self._views.get(tenant)
            changed_at = before.changed_at if before is not None and before.keys == keys else listed_at
            view = self._views[tenant] = _TenantView(keys, filters, listed_at, generation, changed_at)
            for key in before.keys if before is not None else ():
                if key not in keys:
                    self._bodies.pop(key, None)  # cancelled: never listed again
            self.listings_read += 1
        return view

    def filters(self, tenant: str) -> list[DeleteFilter]:
        return self._view(tenant).filters

    def digest(self, tenant: str) -> str:
        """The tenant's delete requests as a results-cache key part. For `max_age_s` after this process
        saw the set change, other processes' queriers may still apply the old one: the key then also
        names that moment, so what is cached meanwhile is never served once every querier has the new set."""
        view = self._view(tenant)
        text = repr(view.filters)
        if self._clock() - view.changed_at < self.max_age_s:
            text += f"|settling since {view.changed_at}"
        return hashlib.sha256(text.encode()).hexdigest()

    def table_filter(self, tenant: str) -> Callable[[Labels, pa.Table], pa.Table] | None:
        """A function removing deleted entries from one stream's table; None when nothing is deleted."""
        filters = self.filters(tenant)
        if not filters:
            return None
        return lambda labels, table: apply_to_table(filters, labels, table)
