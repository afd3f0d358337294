"""Ingester: WAL-first appends into per-tenant streams, chunk cutting, flushing to the store.

Thread-safe: the actor host runs pushes, queries and the flush loop concurrently, so
state changes happen under one lock while uploads run outside it.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from svclog.chunk.head import DEFAULT_BLOCK_BYTES, HeadBlock, SealedChunk
from svclog.chunk.packed import PackedBlock
from svclog.cpu_priority import in_background
from svclog.ingester.instance import (
    SLACK,
    PackedStreams,
    TenantInstance,
    pack_due,
    packed_page,
)
from svclog.ingester.payload import BatchStream, PushedStream, decode_batch, encode_batch
from svclog.ingester.stream import MemoryStream
from svclog.ingester.stream_rate import StreamRateLimitError
from svclog.ingester.tail import TailRegistry
from svclog.ingester.wal import WAL
from svclog.logql import ast
from svclog.model import Labels, Matcher, Span, StreamColumns, SvcError
from svclog.storage.index import MIN_CHUNK_RETAIN_S

log = logging.getLogger(__name__)
MINUTE = 60 * 1_000_000_000


@dataclass(frozen=True)
class IngesterSettings:
    instance_id: str
    wal_dir: str
    wal_enabled: bool = True
    chunk_target_size: int = 1_572_864
    chunk_block_size: int = DEFAULT_BLOCK_BYTES  # a head packs its entries into compressed blocks of this size
    chunk_idle_period: int = 30 * MINUTE
    max_chunk_age: int = 120 * MINUTE
    checkpoint_interval_s: float = 300.0
    max_streams_per_tenant: int = 0
    # ns a flushed chunk stays queryable here; a querier's index listing may be up to
    # storage.index.LISTING_TTL_S old, so the ingester keeps at least that (see retain_s)
    chunk_retain_period: int = 0


class FlushError(SvcError):
    """Chunks could not be written to the object store (they stay in memory and the WAL)."""

    status = 503


class ChunkWriter(Protocol):
    def put_chunks(self, tenant: str, chunks: list[tuple[Labels, SealedChunk]], writer_id: str) -> list[Any]: ...


@dataclass
class IngesterStats:
    pushed_lines: int = 0
    pushed_bytes: int = 0
    flushed_chunks: int = 0
    flush_failures: int = 0
    replayed_records: int = 0
    expired_chunks: int = 0  # flushed chunks dropped after their retain period: their memory is free


class Ingester:
    def __init__(
        self,
        settings: IngesterSettings,
        writer: ChunkWriter,
        stream_limit: Callable[[str], int] | None = None,
        stream_rate: Callable[[str], tuple[float, float]] | None = None,
    ):
        self.settings = settings
        self.writer = writer
        self.stream_limit = stream_limit  # tenant -> this ingester's active stream limit (0: none)
        self.stream_rate = stream_rate  # tenant -> (per-stream bytes/s, burst bytes); rate 0: none
        self.tenants: dict[str, TenantInstance] = {}
        self.stats = IngesterStats()
        self.tails = TailRegistry()
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self._checkpoint_lock = threading.Lock()  # one checkpoint at a time; pushes are not held up
        self._last_checkpoint = time.monotonic()
        # never shorter than the index listings queriers reuse: a chunk flushed after a querier
        # listed the index must still be answered here until that listing has expired
        self.retain_s = max(settings.chunk_retain_period / 1e9, MIN_CHUNK_RETAIN_S)
        self._packer = Packer(
            functools.partial(pack_due, block_bytes=settings.chunk_block_size, lock=self._lock), self.compact_heads
        )
        self.wal = WAL(settings.wal_dir) if settings.wal_enabled else None
        if self.wal is not None:
            self._replay()

    # ------------------------------------------------------------ write path

    def push_payload(self, payload: bytes) -> None:
        """A push in its wire form (see payload.py): logged to the WAL as received when whole."""
        tenant, streams = decode_batch(payload)
        self.push(tenant, streams, encoded=payload)

    def push(self, tenant: str, streams: list[PushedStream], encoded: bytes | None = None) -> None:
        """Log to the WAL, then apply; returns only when the entries are durable in the WAL."""
        if not streams:
            return
        due: list[HeadBlock | SealedChunk] = []
        with self._lock:
            instance = self._instance(tenant)
            # Limits are applied before the WAL write, so refused entries leave nothing to replay.
            given = streams
            streams, refused = instance.admit(streams)
            too_fast: StreamRateLimitError | None = None
            if self.stream_rate is not None and streams:
                streams, too_fast = instance.limit_rate(streams, *self.stream_rate(tenant))
            error: SvcError | None = refused or too_fast
            if streams:
                if self.wal is not None:
                    whole = len(streams) == len(given) and all(a is b for a, b in zip(streams, given))
                    if encoded is not None and whole:
                        self.wal.append((None, encoded))  # None tenant: an encoded batch
                    elif any(isinstance(s, BatchStream) for s in streams):
                        self.wal.append((None, encode_batch(tenant, streams)))
                    else:
                        self.wal.append((tenant, [(s.labels.items, s.ts, s.lines, s.metadata) for s in streams]))
                lines, size = instance.push(streams, time.time_ns(), due)
                self.stats.pushed_lines += lines
                self.stats.pushed_bytes += size
        if due:  # compressed by the packer thread: this push returns, others and selects go on meanwhile
            self._packer.put(due)
        if streams and self.tails.active:  # outside the lock: tail pipelines must not hold up pushes and reads
            self.tails.offer(tenant, streams)
        if error is not None:
            raise error

    def _instance(self, tenant: str) -> TenantInstance:
        instance = self.tenants.get(tenant)
        if instance is None:
            limit: int | Callable[[], int] = self.settings.max_streams_per_tenant
            if self.stream_limit is not None:
                limit = functools.partial(self.stream_limit, tenant)
            instance = self.tenants[tenant] = TenantInstance(
                tenant, limit, self.settings.chunk_target_size, self.settings.chunk_block_size
            )
        return instance

    # ------------------------------------------------------------ read path

    def select(
        self,
        tenant: str,
        matchers: Iterable[Matcher],
        start: int,
        end: int,
        shard: tuple[int, int] | None = None,
        line_filters: tuple[ast.LineFilter, ...] = (),
        deadline: float | None = None,
    ) -> list[tuple[Labels, pa.Table]]:
        with self._lock:
            instance = self.tenants.get(tenant)
            return instance.select(matchers, start, end, shard, line_filters, deadline) if instance else []

    def select_packed(
        self,
        tenant: str,
        matchers: Iterable[Matcher],
        start: int,
        end: int,
        shard: tuple[int, int] | None = None,
        line_filters: tuple[ast.LineFilter, ...] = (),
        deadline: float | None = None,
        cancelled: Callable[[], bool] | None = None,
        after: Labels | None = None,
        page_bytes: int = 0,
    ) -> PackedStreams:
        """`select` for another process; `deadline` (the query's, wall-clock seconds) and `cancelled`
        (true once the caller cancelled the query) stop it early; `after` and `page_bytes` ask for
        one page of it (Instance.select_page)."""
        with self._lock:
            instance = self.tenants.get(tenant)
            if instance is None:
                return PackedStreams.pack([])
            gathered = instance.gather(
                matchers, start, end, shard, line_filters, deadline, cancelled, after, page_bytes
            )
        # decoding, filtering and any copy of slices outside the lock: pushes and the other selects
        # go on meanwhile
        return packed_page(gathered, start, end, line_filters, page_bytes, deadline, cancelled)

    def series(self, tenant: str, matchers: Iterable[Matcher], start: int, end: int) -> list[Labels]:
        with self._lock:
            instance = self.tenants.get(tenant)
            return instance.series(matchers, start, end) if instance else []

    def stream_stats(
        self, tenant: str, matchers: Iterable[Matcher], start: int, end: int
    ) -> list[tuple[Labels, int, int, int]]:
        with self._lock:
            instance = self.tenants.get(tenant)
            return instance.stream_stats(matchers, start, end) if instance else []

    def stats_and_rows(
        self,
        tenant: str,
        matchers: Iterable[Matcher],
        start: int,
        end: int,
        rows_cap: int,
        rows: tuple[int, int],
        deadline: float | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> tuple[list[tuple[Labels, int, int, int]], PackedStreams | None]:
        """`stream_stats` of [start, end), and when a select of `rows` ([from, to)) would carry at
        most `rows_cap` line bytes (retained flushed copies included) that select's answer as well
        (else None): a small query's planning read and its select in one call
        (svclog/querier/prefetched.py)."""
        with self._lock:
            instance = self.tenants.get(tenant)
            if instance is None:
                return [], PackedStreams.pack([])
            stats = instance.stream_stats(matchers, start, end)
            if sum(row[2] for row in stats) > rows_cap or instance.select_bytes(matchers, *rows) > rows_cap:
                return stats, None
            gathered = instance.gather(matchers, *rows, deadline=deadline, cancelled=cancelled)
        return stats, packed_page(gathered, *rows, deadline=deadline, cancelled=cancelled)

    def data_spans(self, tenant: str) -> list[Span]:
        """[min, max] spans of the tenant's entries held here: the frontend skips sub-queries outside them."""
        with self._lock:
            instance = self.tenants.get(tenant)
            return instance.data_spans() if instance else []

    def tenant_ids(self) -> list[str]:
        with self._lock:
            return sorted(self.tenants)

    def flush_queue_length(self) -> int:
        """Sealed chunks waiting for upload (cut on append or by the flush tick)."""
        with self._lock:
            return sum(inst.flush_queue_length() for inst in self.tenants.values())

    def expire_retained(self) -> int:
        """Drop flushed chunks past the retain period (the background loop calls it between flushes)."""
        with self._lock:
            dropped = sum(inst.expire_retained(time.monotonic(), self.retain_s) for inst in self.tenants.values())
            self.stats.expired_chunks += dropped
            return dropped

    def memory_chunks(self) -> int:
        """Chunks in memory: the heads, the chunks waiting for flush and the flushed ones retained."""
        with self._lock:
            return sum(
                len(s.sealed) + len(s.retained) + (1 if len(s.head) else 0)
                for inst in self.tenants.values()
                for s in inst.streams.values()
            )

    def packed(self, timeout: float = 10.0) -> bool:
        """Wait until what earlier pushes left due is packed (see Packer)."""
        return self._packer.wait_idle(timeout)

    def compact_heads(self) -> None:
        """Copy what every head took from pushes since its last compaction into its own buffers
        (HeadBlock.compact: the copies run outside the lock)."""
        with self._lock:
            heads = [stream.head for inst in self.tenants.values() for stream in inst.streams.values()]
        for head in heads:
            head.compact(self._lock)

    # ------------------------------------------------------------ flushing

    def flush(self, force: bool = False) -> int:
        """Cut chunks that are due (all when force) and upload every sealed chunk; returns chunks flushed."""
        return self._flush(force)[0]

    def flush_all(self) -> int:
        """Cut and upload everything (POST /flush); FlushError when an upload failed."""
        flushed, failures = self._flush(True)
        if failures:
            streams, error = failures[0], failures[1]
            raise FlushError(
                f"flush failed: chunks of {streams} stream(s) could not be written to the object "
                f"store and are kept in memory for the next flush: {error}"
            )
        return flushed

    def _flush(self, force: bool) -> tuple[int, tuple[int, str] | tuple[()]]:
        """(chunks flushed, () or (streams that failed, the first store error))."""
        failed, first_error = 0, None
        with self._flush_lock:
            now = time.time_ns()
            with self._lock:
                every = [stream for inst in self.tenants.values() for stream in inst.streams.values()]
            # one stream at a time under the lock: cutting or compacting every head in one hold
            # (~1 s for 120 MB of heads) stalled every push for that long
            for stream in every:
                with self._lock:
                    head = None
                    if force or stream.cut_reason(
                        now,
                        self.settings.chunk_target_size,
                        self.settings.chunk_idle_period,
                        self.settings.max_chunk_age,
                    ):
                        stream.cut()
                    else:
                        head = stream.head
                # packing or compacting bounds how long one push's buffers stay pinned; both copy unlocked
                if head is not None and not head.pack(self.settings.chunk_block_size, self._lock):
                    head.compact(self._lock)
                # a waiting push gets the lock now: Python's locks are not fair, and this thread
                # took it straight back for the next stream (a push waited for the whole pass)
                time.sleep(0)
            with self._lock:
                pending: dict[str, list[tuple[MemoryStream, list[SealedChunk]]]] = {}
                for inst in self.tenants.values():
                    for stream in inst.streams.values():
                        if stream.sealed:
                            pending.setdefault(inst.tenant, []).append((stream, list(stream.sealed)))
            flushed = 0
            # one upload per tenant and cycle: its chunks, then one index segment for all of them (a
            # segment per stream made ~100 small objects per flush for the compactor to merge)
            for tenant, streams in pending.items():
                try:
                    with in_background():  # holds no ingester lock: queries and pushes go first
                        self.writer.put_chunks(
                            tenant,
                            [(stream.labels, c) for stream, chunks in streams for c in chunks],
                            self.settings.instance_id,
                        )
                except Exception as err:  # the store may be down: keep the chunks (and the WAL) and retry later
                    log.exception("flush of %d streams' chunks for tenant %s failed", len(streams), tenant)
                    self.stats.flush_failures += len(streams)
                    failed += len(streams)
                    first_error = first_error or err
                    continue
                done_at = time.monotonic()
                with self._lock:
                    for stream, chunks in streams:
                        stream.flushed(chunks, done_at, self.retain_s)
                flushed += sum(len(chunks) for _, chunks in streams)
            with self._lock:
                for instance in self.tenants.values():
                    self.stats.expired_chunks += instance.expire_retained(time.monotonic(), self.retain_s)
                    instance.drop_empty()
            self.stats.flushed_chunks += flushed
            if flushed or force:
                self.checkpoint()
            return flushed, ((failed, f"{type(first_error).__name__}: {first_error}") if failed else ())

    def maybe_checkpoint(self) -> None:
        if time.monotonic() - self._last_checkpoint >= self.settings.checkpoint_interval_s:
            self.checkpoint()

    def checkpoint(self) -> None:
        """Snapshot unflushed data and drop older WAL segments (keeps replay short)."""
        if self.wal is None:
            return
        with self._checkpoint_lock:
            with self._lock:  # the snapshot and the segment it covers, taken together
                # only references: concatenating every head here (~1 s per 120 MB of heads
                # appended to since the last compaction) stalled every push for that long
                taken = [
                    (inst.tenant, stream.labels.items, list(stream.sealed), stream.head.blocks, stream.head.parts())
                    for inst in self.tenants.values()
                    for stream in inst.streams.values()
                    if stream.sealed or len(stream.head)  # retained chunks are in the store already
                ]
                covered = self.wal.rotate()
            # Copying, pickling and fsyncing the snapshot take long: pushes go on meanwhile (into
            # the next segment, which the snapshot does not cover). Its batches are immutable.
            # Packed blocks are written as they are, compressed (reading a chunk cut on append
            # seals it: here, outside the lock, if no one did yet).
            snapshot = [
                (
                    tenant,
                    items,
                    [block for c in sealed for block in c.blocks] + blocks + ([_own_table(parts)] if parts else []),
                )
                for tenant, items, sealed, blocks, parts in taken
            ]
            self.wal.write_checkpoint(covered, snapshot)
        self._last_checkpoint = time.monotonic()

    def _replay(self) -> None:
        assert self.wal is not None  # called only with the WAL enabled
        snapshot, records = self.wal.replay()
        now = time.time_ns()
        count = 0
        for tenant, label_items, tables in snapshot or []:
            instance = self._instance(tenant)
            for part in tables:
                table = pa.Table.from_batches([part.batch()]) if isinstance(part, PackedBlock) else part
                columns = table.to_pydict()
                instance.push(
                    [
                        StreamColumns(
                            Labels(label_items), columns["ts"], columns["line"], _metadata_pairs(columns["metadata"])
                        )
                    ],
                    now,
                )
        for tenant, streams in records:
            if tenant is None:
                tenant, columns = decode_batch(streams)
            else:
                columns = [StreamColumns(Labels(items), ts, lines, md) for items, ts, lines, md in streams]
            self._instance(tenant).push(columns, now)
            count += 1
        self.stats.replayed_records = count
        if snapshot or count:
            log.info("replayed WAL: checkpoint=%s records=%d", snapshot is not None, count)
            self.checkpoint()

    def close(self) -> None:
        self._packer.stop()
        if self.wal is not None:
            self.wal.close()


class Packer:
    """One thread that compresses what pushes leave due (heads with a block's worth of lines, chunks
    cut on append), in the order pushed: a push never waits for a compression (LZ4 at ~400 MB/s is
    ~0.7 ms per block, and a push can fill a block in each of its streams at once).

    While pushes arrive it also runs `sweep` about once a `sweep_s`: the ingester copies the slices
    heads took from pushes into buffers of their own, so a push's whole batch is not kept for a
    stream that fills its block slowly (at 1M bench lines ~40 MB of pushes stayed pinned so until
    the next flush tick, 30 s later)."""

    def __init__(
        self,
        pack: Callable[[HeadBlock | SealedChunk], None],
        sweep: Callable[[], None] | None = None,
        sweep_s: float = 1.0,
    ):
        self._pack = pack
        self._sweep = sweep
        self._sweep_s = sweep_s
        self._queue: queue.SimpleQueue[list[HeadBlock | SealedChunk] | threading.Event | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def put(self, items: list[HeadBlock | SealedChunk]) -> None:
        if self._thread is None:
            with self._start:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="packer", daemon=True)
                    self._thread.start()
        self._queue.put(items)

    def stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until everything put before this call is packed (tests; a caller that wants it settled)."""
        if self._thread is None:
            return True
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def _run(self) -> None:
        swept, pushed = time.monotonic(), False
        while True:
            try:
                items = self._queue.get(timeout=self._sweep_s)
            except queue.Empty:
                items = []
            if items is None:
                return
            if isinstance(items, threading.Event):
                items.set()
                continue
            pushed = pushed or bool(items)
            for item in items:
                try:
                    self._pack(item)
                except Exception:  # packing only saves memory: the rows stay as they are
                    log.exception("packing a head or chunk failed")
            if self._sweep is not None and pushed and time.monotonic() - swept >= self._sweep_s:
                swept, pushed = time.monotonic(), False
                try:
                    self._sweep()
                except Exception:
                    log.exception("compacting the heads failed")


def _own_table(parts: list[pa.RecordBatch]) -> pa.Table:
    """A head's batches as a table that pickles only its rows. The batches a compaction already
    copied (a head's leading parts) are taken as they are, the rest, from the first slice of a
    whole push (it views more buffer than its rows need) on, are copied out as one batch: joining
    every part was a copy of every head per checkpoint, one copy per small part costs more."""
    first = next(
        (i for i, part in enumerate(parts) if part.get_total_buffer_size() > part.nbytes * SLACK + 4096), len(parts)
    )
    rest = parts[first:]
    if rest:  # concat_arrays writes new buffers of the rows only, even for a single slice
        joined = [pa.concat_arrays([part.column(i) for part in rest]) for i in range(rest[0].num_columns)]
        rest = [pa.RecordBatch.from_arrays(joined, schema=rest[0].schema)]
    return pa.Table.from_batches(parts[:first] + rest)


def _metadata_pairs(values: list[Any]) -> list[list[tuple[str, str]] | None] | None:
    if not any(values):
        return None
    return [list(v) if v else None for v in values]
