"""ResultsCache: partial results of metric sub-queries, in memory, bounded in bytes.

A dashboard re-asks the same query over a window that mostly lies in the past; split by
time, most of its sub-queries are identical to last time's. Their partial results are
kept here, keyed by everything that decides the answer:

- the tenants and the sub-query (printed expression, time range, step, shard);
- the tenants' delete requests as the queriers apply them at query time, so creating or
  cancelling a delete makes earlier answers unreachable at once.

Only sub-queries ending before `now - max_freshness` are stored: data that recent may
still arrive (the reference's `max_cache_freshness_per_query`). Log queries are not
cached. Values are stored pickled: the size bound counts real bytes and a hit can never
share (and mutate) an object with an earlier answer.
"""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass

from svclog.compactor import DeleteRequestStore, QueryTimeDeletes
from svclog.config import Config, object_store_uri
from svclog.logql import ast
from svclog.logql.printer import print_expr
from svclog.logql.rewrite.subquery import SubQuery
from svclog.storage.objstore import ObjectStore


@dataclass
class CacheCounters:
    requests: int = 0
    hits: int = 0
    stored: int = 0
    bytes_sent: int = 0  # bytes served from the cache


class ResultsCache:
    def __init__(self, max_bytes: int, max_freshness_ns: int):
        self.max_bytes = max_bytes
        self.max_freshness_ns = max_freshness_ns
        self._entries: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def key(tenants: tuple[str, ...], sub: SubQuery, deletes_digest: str) -> str:
        p = sub.params
        text = "\x00".join(
            [
                "|".join(tenants),
                print_expr(sub.expr),
                str(p.start),
                str(p.end),
                str(p.step),
                str(p.instant),
                str(p.interval),
                repr(sub.shard),
                deletes_digest,
            ]
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def cacheable(self, sub: SubQuery, now_ns: int) -> bool:
        return not isinstance(sub.expr, ast.LogQuery) and sub.params.end <= now_ns - self.max_freshness_ns

    def get(self, key: str, counters: CacheCounters):
        counters.requests += 1
        with self._lock:
            blob = self._entries.get(key)
            if blob is None:
                return None
            self._entries.move_to_end(key)
        counters.hits += 1
        counters.bytes_sent += len(blob)
        return pickle.loads(blob)

    def put(self, key: str, value, counters: CacheCounters) -> None:
        blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        if len(blob) > self.max_bytes // 4:
            return  # one huge answer would evict everything else
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(old)
            self._entries[key] = blob
            self._bytes += len(blob)
            while self._bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= len(evicted)
        counters.stored += 1

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)


def results_cache_options(cfg: Config) -> dict:
    """QueryFrontend's keyword arguments for a results cache (`query_range.cache_results`; size
    from the embedded cache's `max_size_mb`, default 100), or none when caching is off."""
    if not cfg.query_range.cache_results:
        return {}
    embedded = (cfg.query_range.results_cache.cache or {}).get("embedded_cache") or {}
    max_bytes = int(float(embedded.get("max_size_mb", 100)) * (1 << 20))
    deletes = QueryTimeDeletes(DeleteRequestStore(ObjectStore(object_store_uri(cfg))))
    return {
        "results_cache": ResultsCache(max_bytes, cfg.limits_config.max_cache_freshness_per_query),
        "deletes_digest": deletes.digest,
    }
