"""Shared helpers: write chunks the way ingesters do, read everything back the way queriers do."""

from __future__ import annotations

import pyarrow as pa

from svclog.chunk.format import CHUNK_SCHEMA, decode_chunk
from svclog.chunk.head import SealedChunk
from svclog.compactor import Compactor, CompactorSettings
from svclog.config import LimitsConfig
from svclog.model import NS, Labels, Matcher, MatchType
from svclog.storage import schema
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore

DAY = schema.PERIOD_NS
HOUR = 3600 * NS
NOW = 1795305600 * NS  # 2026-11-22T00:00:00Z
T0 = 1793491200 * NS  # 2026-11-01T00:00:00Z


class Clock:
    def __init__(self, now: int = NOW):
        self.now = now

    def __call__(self) -> int:
        return self.now


def labels(**items: str) -> Labels:
    return Labels(items.items())


def sealed(ts: list[int], lines: list[str]) -> SealedChunk:
    table = pa.table(
        {
            "ts": pa.array(ts, pa.int64()),
            "line": pa.array(lines, pa.string()),
            "metadata": pa.array([None] * len(ts), CHUNK_SCHEMA.field("metadata").type),
        }
    )
    return SealedChunk.from_table(table)


def flush(store: ObjectStore, tenant: str, stream: Labels, ts: list[int], lines: list[str], writer: str = "ing"):
    """One ingester flush: one chunk and one index segment."""
    return ChunkStore(store).put_chunks(tenant, [(stream, sealed(ts, lines))], writer)


def read_all(
    store: ObjectStore, tenant: str, start: int = 0, end: int = NOW + DAY
) -> dict[Labels, list[tuple[int, str]]]:
    """Every entry the read path finds (index -> chunks), de-duplicated like the querier."""
    refs = IndexReader(store).chunk_refs(tenant, (Matcher("__name__", MatchType.NEQ, "x"),), start, end)
    out: dict[Labels, set[tuple[int, str]]] = {}
    chunks = ChunkStore(store)
    for stream, stream_refs in refs.items():
        for ref in stream_refs:
            data = chunks.fetch(ref, start, end)
            out.setdefault(stream, set()).update(zip(data.column("ts").to_pylist(), data.column("line").to_pylist()))
    return {k: sorted(v) for k, v in out.items()}


def stored_lines(store: ObjectStore, tenant: str) -> list[str]:
    """Every line held by ANY chunk object of the tenant, referenced or not."""
    lines = []
    for key in store.list(f"chunks/{tenant}", recursive=True):
        lines.extend(decode_chunk(store.get(key)).line.to_pylist())
    return lines


def chunk_keys(store: ObjectStore, tenant: str) -> set[str]:
    return set(store.list(f"chunks/{tenant}", recursive=True))


def indexed_keys(store: ObjectStore, tenant: str) -> set[str]:
    from svclog.compactor.tenant_index import TenantIndex

    index = TenantIndex(store, tenant)
    return {key for day in index.days() for key in index.day(day).refs}


def make_compactor(store: ObjectStore, clock: Clock, limits: LimitsConfig | None = None, **settings) -> Compactor:
    settings.setdefault("retention_delete_delay", 0)
    settings.setdefault("delete_request_cancel_period", HOUR)
    return Compactor(
        store, CompactorSettings(**settings), limits_for=lambda tenant: limits or LimitsConfig(), clock=clock
    )
