"""The per-tenant, per-period index: which chunks hold which stream's entries.

Each flush writes one immutable index segment (Arrow IPC) per tenant and period
under `index/<tenant>/<period>/` (an ingester: one per tenant and flush cycle); the
compactor merges them. Readers list the segments of the periods a query spans (one LIST
per period, never the tenant's whole prefix) and cache decoded segments by key. A period's
listing is kept for `listing_ttl_s` (LISTING_TTL_S by default) and shared by every query of
the process meanwhile; inside `listing_snapshot` a sub-query keeps the listing it saw first
while it is younger than LISTING_TTL_S. So a segment another process wrote is seen within
LISTING_TTL_S (the visibility delay); one this process wrote, at once. Ingesters keep flushed
chunks queryable for longer than that (MIN_CHUNK_RETAIN_S), so no entry is missed meanwhile.
Concurrent misses of one listing or segment make one request, the others wait for it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from svclog.chunk.format import ChunkLayout
from svclog.model import Labels, Matcher, labels_match
from svclog.storage import schema
from svclog.storage.layout_sidecar import SEGMENT_SUFFIX, encode_table, layouts_table, sidecar_key
from svclog.storage.objstore import ObjectStore
from svclog.storage.single_flight import SingleFlight

INDEX_SCHEMA = pa.schema(
    [
        ("labels", pa.string()),
        ("fingerprint", pa.uint64()),
        ("key", pa.string()),
        ("min_ts", pa.int64()),
        ("max_ts", pa.int64()),
        ("entries", pa.int64()),
        ("bytes", pa.int64()),
        ("compressed", pa.int64()),
        # when the writer sealed the chunk: orders a stream's chunks for entries sharing a timestamp
        # (absent from older segments, read as 0)
        ("sealed_ns", pa.int64()),
    ]
)


# How long a period's listing serves queries (and at most how old a listing a sub-query reuses).
# Safe because an ingester keeps each flushed chunk queryable for MIN_CHUNK_RETAIN_S after the
# flush: a querier reads the ingesters first, then an index listing made at most LISTING_TTL_S
# before, so a chunk flushed after that listing was made is still in the ingester's answer.
LISTING_TTL_S = 5.0
# The ingesters' floor for `chunk_retain_period` (seconds): the listing TTL with a margin, as the
# reference keeps chunks for its index cache's validity plus a minute.
MIN_CHUNK_RETAIN_S = 2 * LISTING_TTL_S
MAX_LISTINGS = 4096  # (tenant, period) listings kept

# (store id, tenant, period) -> listing, while a sub-query runs (see listing_snapshot)
_LISTINGS: ContextVar[dict[tuple[int, str, int], _Listing] | None] = ContextVar("index_listings", default=None)


@contextmanager
def listing_snapshot() -> Iterator[None]:
    """Within it, each period's segments are listed once: a query reading its range in many
    windows (or asking for refs and series) makes one LIST per period, not one per read.
    Segments flushed meanwhile show in the next query, as they would had it started later,
    or once the listing is LISTING_TTL_S old (ingesters retain flushed chunks only so long)."""
    if _LISTINGS.get() is not None:  # nested: the outer snapshot holds
        yield
        return
    token = _LISTINGS.set({})
    try:
        yield
    finally:
        _LISTINGS.reset(token)


@dataclass(frozen=True)
class ChunkRef:
    labels: Labels
    fingerprint: int
    key: str
    min_ts: int
    max_ts: int
    entries: int
    bytes: int
    compressed: int
    sealed_ns: int = 0
    # the index segment the ref was read from (its chunks' layouts lie beside it:
    # layout_sidecar.py); "" when not read from one
    segment: str = field(default="", compare=False)


def encode_labels(labels: Labels) -> str:
    return json.dumps(labels.items, separators=(",", ":"))


def decode_labels(text: str) -> Labels:
    return Labels(tuple(pair) for pair in json.loads(text))


def write_index_segment(
    store: ObjectStore,
    tenant: str,
    refs: list[ChunkRef],
    writer_id: str,
    layouts: Mapping[str, ChunkLayout] | None = None,
) -> list[str]:
    """Write the refs as one segment per period they touch; returns the keys written. With
    `layouts` (by chunk key), each segment's chunks' layouts go first, beside it."""
    by_period: dict[int, list[ChunkRef]] = {}
    for ref in refs:
        for period in schema.periods_between(ref.min_ts, ref.max_ts + 1):
            by_period.setdefault(period, []).append(ref)
    keys = []
    for period, period_refs in by_period.items():
        table = refs_to_table(period_refs)
        key = f"{schema.index_dir(tenant, period)}/{writer_id}-{uuid.uuid4().hex[:12]}{SEGMENT_SUFFIX}"
        known = [(ref.key, layouts[ref.key]) for ref in period_refs if layouts and ref.key in layouts]
        if known:
            store.put(sidecar_key(key), encode_table(layouts_table(known)))
        store.put(key, table_to_bytes(table))
        keys.append(key)
    return keys


def refs_to_table(refs: list[ChunkRef]) -> pa.Table:
    return pa.table(
        {
            "labels": [encode_labels(r.labels) for r in refs],
            "fingerprint": pa.array([r.fingerprint for r in refs], pa.uint64()),
            "key": [r.key for r in refs],
            "min_ts": pa.array([r.min_ts for r in refs], pa.int64()),
            "max_ts": pa.array([r.max_ts for r in refs], pa.int64()),
            "entries": pa.array([r.entries for r in refs], pa.int64()),
            "bytes": pa.array([r.bytes for r in refs], pa.int64()),
            "compressed": pa.array([r.compressed for r in refs], pa.int64()),
            "sealed_ns": pa.array([r.sealed_ns for r in refs], pa.int64()),
        },
        schema=INDEX_SCHEMA,
    )


def table_to_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, INDEX_SCHEMA, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


class _Segment:
    """A decoded index segment: its table, the distinct streams in it, and per selector (matchers
    and shard) which rows belong to matching streams. Segments are immutable and cached, and a
    query asks for the same selector once per time window, so that answer is kept (bounded)."""

    MAX_SELECTORS = 64

    def __init__(self, table: pa.Table, key: str = ""):
        self.table = table
        self.key = key
        self.streams: dict[int, Labels] = {}
        fps = table.column("fingerprint").to_pylist()
        texts = table.column("labels").to_pylist()
        for fp, text in zip(fps, texts):
            if fp not in self.streams:
                self.streams[fp] = decode_labels(text)
        self._fingerprints = table.column("fingerprint").to_numpy()
        self._min_ts = table.column("min_ts").to_numpy()
        self._max_ts = table.column("max_ts").to_numpy()
        self._selected: OrderedDict[tuple, np.ndarray | None] = OrderedDict()
        self._refs: list[ChunkRef] | None = None
        self._lock = threading.Lock()

    def matching_rows(self, matchers: tuple[Matcher, ...], shard: tuple[int, int] | None) -> np.ndarray | None:
        """Row mask of the chunks of streams matching the selector; None when no stream matches."""
        key = (matchers, shard)
        with self._lock:
            if key in self._selected:
                self._selected.move_to_end(key)
                return self._selected[key]
        wanted = [
            fp
            for fp, labels in self.streams.items()
            if labels_match(labels, matchers) and (shard is None or fp % shard[1] == shard[0])
        ]
        rows = np.isin(self._fingerprints, np.array(wanted, dtype=np.uint64)) if wanted else None
        with self._lock:
            self._selected[key] = rows
            while len(self._selected) > self.MAX_SELECTORS:
                self._selected.popitem(last=False)
        return rows

    def refs(self, rows: np.ndarray, start: int, end: int) -> list[ChunkRef]:
        """The selected rows' chunks overlapping [start, end)."""
        hit = np.flatnonzero(rows & (self._min_ts < end) & (self._max_ts >= start))
        if not len(hit):
            return []
        all_refs = self._all_refs()
        return [all_refs[i] for i in hit.tolist()]

    def _all_refs(self) -> list[ChunkRef]:
        """Every row as a ChunkRef, built once (refs are immutable, and queries ask again and again)."""
        if self._refs is None:
            self._refs = [
                ChunkRef(
                    self.streams[row["fingerprint"]],
                    row["fingerprint"],
                    row["key"],
                    row["min_ts"],
                    row["max_ts"],
                    row["entries"],
                    row["bytes"],
                    row["compressed"],
                    row.get("sealed_ns") or 0,
                    self.key,
                )
                for row in self.table.to_pylist()
            ]
        return self._refs


@dataclass(frozen=True)
class _Listing:
    keys: list[str]
    listed_at: float
    generation: int  # the store's writes under the prefix in this process when it was listed


class IndexReader:
    """Looks up chunk refs; caches decoded segments (they are immutable), least recently used
    first out, up to a count and (when given) a size in decoded bytes, and each period's listing
    for `listing_ttl_s` (0: list for every query; never more than LISTING_TTL_S in a service, as
    the ingesters' retain period covers only that)."""

    def __init__(
        self,
        store: ObjectStore,
        max_cached_segments: int = 4096,
        max_cached_bytes: int | None = None,
        listing_ttl_s: float = LISTING_TTL_S,
        clock=time.monotonic,
    ):
        self.store = store
        self.max_cached = max_cached_segments
        self.max_cached_bytes = max_cached_bytes
        self.listing_ttl_s = listing_ttl_s
        self._clock = clock
        self._cache: OrderedDict[str, _Segment] = OrderedDict()
        self._listings: OrderedDict[tuple[str, int | None], _Listing] = OrderedDict()
        self._lock = threading.Lock()
        self._loading = SingleFlight()
        self.cached_bytes = 0
        self.cache_hits = 0
        self.segments_read = 0  # segment objects fetched from the store (cache misses)
        self.listings_read = 0  # LISTs made (listing cache misses)

    def _cached_segment(self, key: str) -> _Segment | None:
        with self._lock:
            seg = self._cache.get(key)
            if seg is not None:
                self._cache.move_to_end(key)
                self.cache_hits += 1
            return seg

    def _segment(self, key: str) -> _Segment | None:
        seg = self._cached_segment(key)
        if seg is not None:
            return seg
        with self._loading.gate(key):
            try:
                seg = self._cached_segment(key)  # loaded by the request this one waited for
                if seg is not None:
                    return seg
                try:
                    data = self.store.get(key)
                except FileNotFoundError:
                    return None  # removed by the compactor between list and read
                seg = _Segment(pa.ipc.open_file(pa.BufferReader(data)).read_all(), key)
                with self._lock:
                    self.segments_read += 1
                    if key not in self._cache:
                        self._cache[key] = seg
                        self.cached_bytes += seg.table.nbytes
                    while self._cache and (
                        len(self._cache) > self.max_cached
                        or (self.max_cached_bytes is not None and self.cached_bytes > self.max_cached_bytes)
                    ):
                        _, evicted = self._cache.popitem(last=False)
                        self.cached_bytes -= evicted.table.nbytes
                return seg
            finally:
                self._loading.done(key)

    def cached_segments(self) -> int:
        return len(self._cache)

    def _fresh(self, slot: tuple[str, int | None], prefix: str) -> _Listing | None:
        with self._lock:
            entry = self._listings.get(slot)
        if entry is None or self._clock() - entry.listed_at >= self.listing_ttl_s:
            return None
        return entry if entry.generation == self.store.generation(prefix) else None

    def _list_cached(self, slot: tuple[str, int | None], prefix: str, list_fn, fresh: bool) -> _Listing:
        """The prefix's listing from the cache while it is fresh, else one LIST (shared by concurrent callers)."""
        entry = None if fresh else self._fresh(slot, prefix)
        if entry is not None:
            return entry
        with self._loading.gate(slot):
            try:
                entry = None if fresh else self._fresh(slot, prefix)  # listed by the caller this one waited for
                if entry is not None:
                    return entry
                generation = self.store.generation(prefix)  # before the LIST: a write meanwhile lists again
                listed_at = self._clock()  # before the LIST too: the listing's age is never understated
                entry = _Listing(list_fn(), listed_at, generation)
                with self._lock:
                    self.listings_read += 1
                    self._listings[slot] = entry
                    self._listings.move_to_end(slot)
                    while len(self._listings) > MAX_LISTINGS:
                        self._listings.popitem(last=False)
                return entry
            finally:
                self._loading.done(slot)

    def _listing(self, tenant: str, period: int, fresh: bool = False) -> list[str]:
        memo = _LISTINGS.get()
        memo_key = (id(self.store), tenant, period)
        if memo is not None and not fresh and memo_key in memo:
            kept = memo[memo_key]
            if self._clock() - kept.listed_at < LISTING_TTL_S:  # older: flushed chunks may have left the ingesters
                return kept.keys
        prefix = schema.index_dir(tenant, period)
        entry = self._list_cached(
            (tenant, period),
            prefix,
            fresh=fresh,
            list_fn=lambda: [k for k in self.store.list(prefix) if k.endswith(SEGMENT_SUFFIX)],
        )
        if memo is not None:
            memo[memo_key] = entry
        return entry.keys

    def _periods_present(self, tenant: str) -> list[int]:
        """The tenant's periods that have an index directory (one delimited LIST, cached like a listing)."""
        prefix = schema.index_dir(tenant, 0).rsplit("/", 1)[0]
        listing = self._list_cached((tenant, None), prefix, fresh=False, list_fn=lambda: self.store.list_dirs(prefix))
        return [int(p) for p in listing.keys if p.lstrip("-").isdigit()]

    def segments(self, tenant: str, start: int, end: int) -> Iterable[_Segment]:
        wanted: Sequence[int] = schema.periods_between(start, end)
        if len(wanted) > 32:
            # A wide range (a query over years): list the periods that exist instead of every day in it.
            wanted = sorted(p for p in self._periods_present(tenant) if p in wanted)
        for period in wanted:
            seen: set[str] = set()
            keys = self._listing(tenant, period)
            for _ in range(2):
                gone = False
                for key in keys:
                    if key in seen:
                        continue
                    seen.add(key)
                    seg = self._segment(key)
                    if seg is None:
                        gone = True
                    else:
                        yield seg
                if not gone:
                    break
                # A segment went between list and read: the compactor replaced it (merged
                # segment written first, then the old ones removed). List again for the new one.
                keys = self._listing(tenant, period, fresh=True)

    def chunk_refs(
        self, tenant: str, matchers: Iterable[Matcher], start: int, end: int, shard: tuple[int, int] | None = None
    ) -> dict[Labels, list[ChunkRef]]:
        """Refs of chunks overlapping [start, end) of streams matching all matchers."""
        matchers = tuple(matchers)
        found: dict[Labels, dict[str, ChunkRef]] = {}
        for seg in self.segments(tenant, start, end):
            rows = seg.matching_rows(matchers, shard)
            if rows is None:
                continue
            for ref in seg.refs(rows, start, end):
                found.setdefault(ref.labels, {})[ref.key] = ref
        return {labels: sorted(refs.values(), key=lambda r: r.min_ts) for labels, refs in found.items()}

    def series(self, tenant: str, matchers: Iterable[Matcher], start: int, end: int) -> set[Labels]:
        return set(self.chunk_refs(tenant, matchers, start, end))
