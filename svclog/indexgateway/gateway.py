"""IndexGateway: answers a tenant's index lookups from the object store for the queriers.

The lookups are the ones a querier makes of the index (`IndexReader`'s `chunk_refs` and
`series`); the gateway answers them with the same reader, so an answer equals the direct
read, and keeps one bounded cache of decoded index segments that every querier using it
shares (immutable segments: a cache entry is never stale; the listing of a period is read
per lookup, so a newly flushed segment is seen at once).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from svclog.model import Labels, Matcher
from svclog.storage.index import ChunkRef, IndexReader
from svclog.storage.objstore import ObjectStore


@dataclass(frozen=True)
class GatewaySettings:
    max_cached_segments: int = 4096
    max_cached_bytes: int = 256 << 20  # decoded Arrow bytes of the cached segments


class IndexGateway:
    def __init__(self, store: ObjectStore, settings: GatewaySettings = GatewaySettings()):
        self.reader = IndexReader(store, settings.max_cached_segments, settings.max_cached_bytes)
        self._lookups = {"chunk_refs": 0, "series": 0}
        self._tenants: set[str] = set()
        self._lock = threading.Lock()

    def _count(self, method: str, tenant: str) -> None:
        with self._lock:
            self._lookups[method] += 1
            self._tenants.add(tenant)

    def chunk_refs(
        self, tenant: str, matchers: Iterable[Matcher], start: int, end: int, shard: tuple[int, int] | None = None
    ) -> dict[Labels, list[ChunkRef]]:
        """Refs of the chunks overlapping [start, end) of the tenant's streams matching all matchers."""
        self._count("chunk_refs", tenant)
        return self.reader.chunk_refs(tenant, matchers, start, end, shard)

    def series(self, tenant: str, matchers: Iterable[Matcher], start: int, end: int) -> set[Labels]:
        """The label sets of the tenant's streams with chunks in [start, end) matching all matchers."""
        self._count("series", tenant)
        return self.reader.series(tenant, matchers, start, end)

    def stats(self) -> dict:
        with self._lock:
            lookups = dict(self._lookups)
            tenants = len(self._tenants)
        reader = self.reader
        return {
            "lookups": lookups,
            "tenants": tenants,
            "segments_read": reader.segments_read,
            "cache_hits": reader.cache_hits,
            "cached_segments": reader.cached_segments(),
            "cached_bytes": reader.cached_bytes,
        }
