"""Chunk store: writes sealed chunks plus their index refs; reads chunks through an LRU cache.
Concurrent reads of one uncached chunk (sub-queries of a query on one querier) make one GET."""

from __future__ import annotations

import threading
import time
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from svclog.chunk.format import (
    CHUNK_SCHEMA,
    BlockScan,
    BlockTest,
    ChunkLayout,
    chunk_layout,
    decode_blocks,
    encode_blocks,
    encode_chunk,
    open_chunk,
)
from svclog.chunk.head import SealedChunk
from svclog.chunk.pushdown import BlockProbe
from svclog.model import Labels
from svclog.storage import schema
from svclog.storage.index import ChunkRef, write_index_segment
from svclog.storage.layout_cache import LayoutCache, LayoutStack
from svclog.storage.layout_sidecar import SidecarLoader
from svclog.storage.objstore import ObjectStore
from svclog.storage.single_flight import SingleFlight


@dataclass
class FetchStats:
    chunks_downloaded: int = 0
    compressed_bytes: int = 0
    download_seconds: float = 0.0
    blocks: BlockScan = field(default_factory=BlockScan)


def _split_by_period(labels: Labels, chunk: SealedChunk) -> list[tuple[Labels, SealedChunk]]:
    """One chunk per index period it has entries in: a stream with entries years apart must
    not make one chunk that every day's index in between has to list."""
    if schema.period_of(chunk.min_ts) == schema.period_of(chunk.max_ts):
        return [(labels, chunk)]
    table = chunk.table
    periods = table.column("ts").to_numpy() // schema.PERIOD_NS  # floor, like period_of
    pieces = []
    for period in np.unique(periods):
        part = table.filter(pa.array(periods == period))
        pieces.append((labels, SealedChunk.from_table(part, chunk.sealed_ns)))
    return pieces


class ChunkStore:
    def __init__(
        self,
        store: ObjectStore,
        *,
        cache_bytes: int = 256 << 20,
        encoding: str = "zstd",
        block_bytes: int = 256 * 1024,
        token_index: bool = True,
        layout_bytes: int = 32 << 20,
    ):
        self.store = store
        self.token_index = token_index
        self.encoding = encoding
        self.block_bytes = block_bytes
        self.cache_bytes = cache_bytes
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        # the opened file of a cached chunk (its footer parsed once: ~0.2 ms a read, 11% of the
        # querier's CPU in the 8-client bench phase); dropped with the chunk's bytes
        self._readers: dict[tuple[str, bool], pa.ipc.RecordBatchFileReader] = {}
        # block bounds and token index of every chunk read, kept apart from (and longer than) the
        # bytes: a chunk its filters rule out is then never fetched again (see layout_cache.py)
        self.layouts = LayoutCache(layout_bytes)
        # and every layout of a flush from the object beside its index segment, in one GET
        self.sidecars = SidecarLoader(store, self.layouts)
        # recent probes' lookups in the current stack: (probe, stack, possible blocks), newest last
        self._possible: list[tuple[BlockProbe, LayoutStack, np.ndarray]] = []
        self._cached = 0
        self._lock = threading.Lock()
        self._loading = SingleFlight()

    def put_chunks(self, tenant: str, chunks: list[tuple[Labels, SealedChunk]], writer_id: str) -> list[ChunkRef]:
        """Upload chunks, then their index refs (a ref never points at a missing chunk)."""
        refs = []
        layouts: dict[str, ChunkLayout] = {}  # written beside the index segment (layout_sidecar.py)
        for whole_labels, whole in chunks:
            keys = []
            for labels, chunk in _split_by_period(whole_labels, whole):
                own_blocks = chunk is whole and chunk.block_bytes == self.block_bytes
                if own_blocks:
                    # the chunk's own blocks become the file's: the ingester's retained copy reads the
                    # file's token index against these very blocks
                    batches = [block.batch() for block in chunk.blocks]
                    data = encode_blocks(batches, encoding=self.encoding, token_index=self.token_index)
                    rows = sum(batch.num_rows for batch in batches)
                else:
                    table = chunk.table
                    data = encode_chunk(
                        table, block_bytes=self.block_bytes, encoding=self.encoding, token_index=self.token_index
                    )
                    rows = table.num_rows
                fingerprint = labels.fingerprint()
                key = schema.chunk_key(tenant, fingerprint, chunk.min_ts, chunk.max_ts, zlib.crc32(data))
                self.store.put(key, data)
                keys.append(key)
                if self.token_index:
                    layouts[key] = chunk_layout(data)
                    if own_blocks:
                        chunk.layout = layouts[key]  # the file's blocks are the chunk's
                refs.append(
                    ChunkRef(
                        labels,
                        fingerprint,
                        key,
                        chunk.min_ts,
                        chunk.max_ts,
                        rows,
                        chunk.raw_bytes,
                        len(data),
                        chunk.sealed_ns,
                    )
                )
            whole.store_keys = tuple(keys)
        if refs:
            write_index_segment(self.store, tenant, refs, writer_id, layouts)
        return refs

    def fetch(
        self,
        ref: ChunkRef,
        start: int,
        end: int,
        stats: FetchStats | None = None,
        may_match: BlockTest | None = None,
        lines: bool = True,
    ) -> pa.Table:
        """Entries of the chunk in [start, end), a table chunk per block, leaving out blocks
        `may_match` rules out by their token filter (the whole chunk is still one GET: the filters
        sit in its footer). Without `lines`, lines are left undecoded (see format.decode_blocks)."""
        data = self._get_cached(ref.key)
        if data is None:
            data = self._download(ref.key, stats)
        if stats is not None:
            stats.compressed_bytes += len(data)
        layout = self._layout(ref.key, data)  # every read: its block bounds choose the blocks to decode
        batches = decode_blocks(
            data,
            start,
            end,
            may_match,
            stats.blocks if stats is not None else None,
            layout,
            lambda whole: self._opened(ref.key, data, whole),
            lines,
        )
        return pa.Table.from_batches(batches, schema=CHUNK_SCHEMA)

    def _download(self, key: str, stats: FetchStats | None) -> bytes:
        with self._loading.gate(key):
            try:
                data = self._get_cached(key)  # fetched by the read this one waited for
                if data is not None:
                    return data
                began = time.perf_counter()
                data = self.store.get(key)
                if stats is not None:
                    stats.chunks_downloaded += 1
                    stats.download_seconds += time.perf_counter() - began
                self._put_cached(key, data)
                return data
            finally:
                self._loading.done(key)

    def _layout(self, key: str, data: bytes) -> ChunkLayout:
        layout = self.layouts.get(key)
        if layout is None:
            layout = chunk_layout(data)
            self.layouts.put(key, layout)
        return layout

    def ruled_out(
        self, refs: list[ChunkRef], start: int, end: int, probe: BlockProbe, stats: FetchStats | None = None
    ) -> np.ndarray:
        """Per ref: True when a layout read before shows that none of the chunk's blocks in
        [start, end) can hold a line `probe` wants, so it need not be fetched at all (its blocks
        are counted into `stats` as a fetch would have). Chunks never read are False: fetch them.
        The probe's lookup over all stacked blocks is kept while the stack stays the same, so the
        time windows of one query (the caller passes the same probe object) share one. Chunks not
        known yet are learned from the layouts beside their index segments first."""
        stack, possible = self._probed(refs, probe)
        scan = stats.blocks if stats is not None else BlockScan()
        return stack.ruled_out([ref.key for ref in refs], start, end, possible, scan)

    def kept_share(self, refs: list[ChunkRef], start: int, end: int, probe: BlockProbe) -> np.ndarray:
        """Per ref: the share of its blocks in [start, end) a read would decode after the token
        index (1.0 where the chunk's layout is not known): a planner's estimate of its read."""
        stack, possible = self._probed(refs, probe)
        return stack.kept_share([ref.key for ref in refs], start, end, possible)

    def _probed(self, refs: list[ChunkRef], probe: BlockProbe) -> tuple[LayoutStack, np.ndarray]:
        """The current stack (refs' chunks learned from their segments' layouts where they can
        be) and the probe's answer per stacked block."""
        self.sidecars.learn(refs)
        stack = self.layouts.stack()
        possible = None
        with self._lock:
            for seen, seen_stack, mask in self._possible:
                if seen is probe and seen_stack is stack:
                    possible = mask
        if possible is None:
            possible = probe.may_match(stack.index)
            with self._lock:  # entries of an older stack go: each pins a copy of every filter
                self._possible = [e for e in self._possible[-7:] if e[1] is stack] + [(probe, stack, possible)]
        return stack, possible

    def _opened(self, key: str, data: bytes, lines: bool = True) -> pa.ipc.RecordBatchFileReader:
        """The chunk's opened file (with or without its lines: two readers), kept while its bytes
        are cached (opened on the first read that decodes a block of it)."""
        with self._lock:
            reader = self._readers.get((key, lines))
        if reader is not None:
            return reader
        reader = open_chunk(data, lines)
        with self._lock:
            if self._cache.get(key) is data:  # still cached: keep it for the next read
                reader = self._readers.setdefault((key, lines), reader)
        return reader

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
                gone, old = self._cache.popitem(last=False)
                self._readers.pop((gone, True), None)
                self._readers.pop((gone, False), None)
                self._cached -= len(old)
