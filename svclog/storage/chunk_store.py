"""Chunk store: writes sealed chunks plus their index refs; reads chunks through an LRU cache."""
from __future__ import annotations

import threading
import time
import zlib

import numpy as np
import pyarrow as pa
from collections import OrderedDict
from dataclasses import dataclass

from svclog.chunk.format import ChunkData, decode_chunk, encode_chunk
from svclog.chunk.head import SealedChunk
from svclog.model import Labels
from svclog.storage import schema
from svclog.storage.index import ChunkRef, write_index_segment
from svclog.storage.objstore import ObjectStore


@dataclass
class FetchStats:
    chunks_downloaded: int = 0
    compressed_bytes: int = 0
    download_seconds: float = 0.0


def _split_by_period(labels: Labels, chunk: SealedChunk) -> list[tuple[Labels, SealedChunk]]:
    """One chunk per index period it has entries in: a stream with entries years apart must
    not make one chunk that every day's index in between has to list."""
    if schema.period_of(chunk.min_ts) == schema.period_of(chunk.max_ts):
        return [(labels, chunk)]
    periods = chunk.table.column("ts").to_numpy() // schema.PERIOD_NS  # floor, like period_of
    pieces = []
    for period in np.unique(periods):
        part = chunk.table.filter(pa.array(periods == period))
        pieces.append((labels, SealedChunk.from_table(part, chunk.sealed_ns)))
    return pieces


class ChunkStore:
    def __init__(self, store: ObjectStore, *, cache_bytes: int = 256 << 20,
                 encoding: str = "zstd", block_bytes: int = 256 * 1024):
        self.store = store
        self.encoding = encoding
        self.block_bytes = block_bytes
        self.cache_bytes = cache_bytes
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()

    def put_chunks(self, tenant: str, chunks: list[tuple[Labels, SealedChunk]], writer_id: str) -> list[ChunkRef]:
        """Upload chunks, then their index refs (a ref never points at a missing chunk)."""
        refs = []
        for labels, chunk in (piece for item in chunks for piece in _split_by_period(*item)):
            data = encode_chunk(chunk.table, block_bytes=self.block_bytes, encoding=self.encoding)
            fingerprint = labels.fingerprint()
            key = schema.chunk_key(tenant, fingerprint, chunk.min_ts, chunk.max_ts, zlib.crc32(data))
            self.store.put(key, data)
            refs.append(ChunkRef(labels, fingerprint, key, chunk.min_ts, chunk.max_ts,
                                 chunk.table.num_rows, chunk.raw_bytes, len(data), chunk.sealed_ns))
        if refs:
            write_index_segment(self.store, tenant, refs, writer_id)
        return refs

    def fetch(self, ref: ChunkRef, start: int, end: int, stats: FetchStats | None = None) -> ChunkData:
        data = self._get_cached(ref.key)
        if data is None:
            began = time.perf_counter()
            data = self.store.get(ref.key)
            if stats is not None:
                stats.chunks_downloaded += 1
                stats.download_seconds += time.perf_counter() - began
            self._put_cached(ref.key, data)
        if stats is not None:
            stats.compressed_bytes += len(data)
        return decode_chunk(data, start, end)

    def _get_cached(self, key: str) -> bytes | None:
        with self._lock:
            data = self._cache.get(key)
            if data is not None:
                self._cache.move_to_end(key)
            return data

    def _put_cached(self, key: str, data: bytes) -> None:
        if len(data) > self.cache_bytes:
            return
        with self._lock:
            if key in self._cache:
                return
            self._cache[key] = data
            self._cached += len(data)
            while self._cached > self.cache_bytes:
                _, old = self._cache.popitem(last=False)
                self._cached -= len(old)
