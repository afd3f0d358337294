"""TenantInstance: one tenant's streams inside an ingester, found by label set, and its stream limit."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.chunk.head import DEFAULT_BLOCK_BYTES, HeadBlock, SealedChunk, entries_batch
from svclog.chunk.packed import PackedBlock, line_bytes_of
from svclog.chunk.pushdown import apply_line_filters, block_probe
from svclog.ingester.payload import BatchStream, PushedStream
from svclog.ingester.stream import MemoryStream, Piece, line_bytes
from svclog.ingester.stream_rate import StreamRateLimitError, StreamRateLimits
from svclog.logql import ast
from svclog.logql.source import IngesterScan
from svclog.model import Labels, LimitError, Matcher, Span, SvcError, labels_match, merge_spans


class StreamLimitError(LimitError):
    """A new stream would exceed the tenant's active stream limit (429, as the reference)."""

    status = 429


def local_stream_limit(
    max_streams_per_user: int, max_global_streams_per_user: int, healthy_ingesters: int, replication_factor: int
) -> int:
    """The per-ingester stream limit, 0 for none: the smaller non-zero of the local limit and
    the global one spread over the healthy ingesters, times the replication factor (each
    stream lives on rf of them). With no healthy ingester known the global limit is skipped."""
    spread = 0
    if max_global_streams_per_user > 0 and healthy_ingesters > 0:
        spread = int(max_global_streams_per_user / healthy_ingesters * max(1, replication_factor))
    limits = [n for n in (max_streams_per_user, spread) if n > 0]
    return min(limits) if limits else 0


class SelectDeadlinePassed(SvcError):
    """A select stopped because its query's deadline passed; the querier answers with the query's
    own timeout error (its guard names the timeout), nobody reads this one's rows."""

    status = 504


class SelectCancelled(SvcError):
    """A select stopped because its query was cancelled (the client went away, the frontend gave up)."""

    status = 499


def check_deadline(deadline: float | None, cancelled: Callable[[], bool] | None = None) -> None:
    if deadline is not None and time.time() >= deadline:
        raise SelectDeadlinePassed("ingester select stopped: the query's deadline passed")
    if cancelled is not None and cancelled():
        raise SelectCancelled("ingester select stopped: the query was cancelled")


class TenantInstance:
    def __init__(
        self,
        tenant: str,
        max_streams: int | Callable[[], int] = 0,
        chunk_target_size: int = 0,
        block_bytes: int = DEFAULT_BLOCK_BYTES,
    ):
        self.tenant = tenant
        self._max_streams = max_streams  # a number, or a callable read when new streams arrive
        self.chunk_target_size = chunk_target_size  # a head is cut when it reaches this (0: never on append)
        self.block_bytes = block_bytes  # a head's open part is packed into a block at this many line bytes
        self.streams: dict[Labels, MemoryStream] = {}
        self.rates = StreamRateLimits()

    def limit_rate(
        self, streams: list[PushedStream], rate: float, burst: float
    ) -> tuple[list[PushedStream], StreamRateLimitError | None]:
        """The per-stream rate limit: the entries within it, and the error for the rest."""
        return self.rates.admit(streams, rate, burst)

    @property
    def max_streams(self) -> int:
        limit = self._max_streams
        return int(limit() if callable(limit) else limit)

    def admit(self, streams: list[PushedStream]) -> tuple[list[PushedStream], StreamLimitError | None]:
        """Split a push into the streams that fit the active stream limit and the error for the rest.

        As the reference does, known streams always pass and new ones are taken in order until
        the limit; everything refused is reported by one error naming the first refused stream.
        """
        if all(s.labels in self.streams for s in streams):
            return streams, None
        limit = self.max_streams
        if not limit:
            return streams, None
        accepted: list[PushedStream] = []
        refused: list[PushedStream] = []
        created: set[Labels] = set()
        for data in streams:
            if data.labels in self.streams or data.labels in created:
                accepted.append(data)
            elif len(self.streams) + len(created) < limit:
                created.add(data.labels)
                accepted.append(data)
            else:
                refused.append(data)
        if not refused:
            return accepted, None
        return accepted, StreamLimitError(
            f"Maximum active stream limit exceeded when trying to create stream {refused[0].labels}, "
            f"reduce the number of active streams (reduce labels or reduce label values), or contact "
            f"your Loki administrator to see if the limit can be increased, user: '{self.tenant}'"
        )

    def push(
        self, streams: Iterable[PushedStream], now_ns: int, due: list[HeadBlock | SealedChunk] | None = None
    ) -> tuple[int, int]:
        """Append entries; returns (lines, bytes). Limits are the caller's (`admit`): WAL replay skips them.
        Heads whose open part now holds a block's worth, and chunks cut by this push, are added to
        `due`: the caller packs them (`pack_due`) outside its lock; without `due` they are packed here."""
        given = [s for s in streams if len(s)]
        if not given:
            return 0, 0
        slices = _batch_slices(given)
        lines = size = 0
        ready: list[HeadBlock | SealedChunk] = [] if due is None else due
        for data, part in zip(given, slices):
            stream = self.streams.get(data.labels)
            if stream is None:
                stream = self.streams[data.labels] = MemoryStream(data.labels, now_ns, self.block_bytes)
            raw = data.raw_bytes()
            low, high = data.ts_bounds() if isinstance(data, BatchStream) else (min(data.ts), max(data.ts))
            stream.append(part, low, high, raw, now_ns, shared=len(given) > 1 or isinstance(data, BatchStream))
            if self.chunk_target_size and stream.head.raw_bytes >= self.chunk_target_size:
                # as the reference: a full chunk is cut on append, not at the next flush tick
                ready.append(stream.cut())  # type: ignore[arg-type]  # the head was not empty
            elif stream.head.pack_due(self.block_bytes):
                ready.append(stream.head)
            lines += len(data)
            size += raw
        if due is None:
            for item in ready:
                pack_due(item, self.block_bytes)
        return lines, size

    def matching(self, matchers: Iterable[Matcher], shard: tuple[int, int] | None = None) -> Iterator[MemoryStream]:
        matchers = tuple(matchers)
        for stream in list(self.streams.values()):
            if shard is not None and stream.fingerprint % shard[1] != shard[0]:
                continue
            if labels_match(stream.labels, matchers):
                yield stream

    def select(
        self,
        matchers: Iterable[Matcher],
        start: int,
        end: int,
        shard: tuple[int, int] | None = None,
        line_filters: tuple[ast.LineFilter, ...] = (),
        deadline: float | None = None,
    ) -> list[tuple[Labels, pa.Table]]:
        return self.select_scanned(matchers, start, end, shard, line_filters, deadline)[0]

    def select_scanned(
        self,
        matchers: Iterable[Matcher],
        start: int,
        end: int,
        shard: tuple[int, int] | None = None,
        line_filters: tuple[ast.LineFilter, ...] = (),
        deadline: float | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> tuple[list[tuple[Labels, pa.Table]], IngesterScan]:
        """`select`, and what it scanned for it before the line filters (the query stats): lines and
        bytes in the range of head blocks and of sealed chunks, and the chunks overlapping it.

        `deadline` (wall-clock seconds, the query's) and `cancelled` (true once the query is
        cancelled) are checked between streams, so a select whose query has timed out or was
        cancelled stops (SelectDeadlinePassed, SelectCancelled) instead of holding the ingester."""
        packed = PackedStreams.pack(*self.select_page(matchers, start, end, shard, line_filters, deadline, cancelled))
        found = packed.unpack()
        return found, packed.scan

    def select_page(
        self,
        matchers: Iterable[Matcher],
        start: int,
        end: int,
        shard: tuple[int, int] | None = None,
        line_filters: tuple[ast.LineFilter, ...] = (),
        deadline: float | None = None,
        cancelled: Callable[[], bool] | None = None,
        after: Labels | None = None,
        page_bytes: int = 0,
    ) -> tuple[list[tuple[Labels, list[Piece]]], IngesterScan, Labels | None, tuple[int, int]]:
        """`select_scanned` one page at a time, each stream's entries as the pieces that hold them:
        `gather`, then `page_of` (an ingester runs the second outside its lock)."""
        gathered = self.gather(matchers, start, end, shard, line_filters, deadline, cancelled, after, page_bytes)
        return page_of(gathered, start, end, line_filters, page_bytes, deadline, cancelled)

    def gather(
        self,
        matchers: Iterable[Matcher],
        start: int,
        end: int,
        shard: tuple[int, int] | None = None,
        line_filters: tuple[ast.LineFilter, ...] = (),
        deadline: float | None = None,
        cancelled: Callable[[], bool] | None = None,
        after: Labels | None = None,
        page_bytes: int = 0,
    ) -> list[Gathered]:
        """What holds each matching stream's entries in [start, end) (references: immutable blocks
        and slices), in label order after `after` when paging. This is all a select does under the
        ingester's lock; decoding and filtering the pieces (`page_of`) need none."""
        probe = block_probe(line_filters)  # flushed chunks skip blocks by their token index
        streams: Iterable[MemoryStream] = self.matching(matchers, shard)
        if page_bytes:
            streams = sorted((s for s in streams if after is None or after < s.labels), key=lambda s: s.labels.items)
        found = []
        for stream in streams:
            check_deadline(deadline, cancelled)
            found.append(
                Gathered(
                    stream.labels,
                    stream.pieces(start, end, probe=probe),
                    stream.parts_overlapping(start, end),
                    stream.retained_keys(start, end),
                )
            )
        return found

    def select_packed(
        self,
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
        """`select` (or one page of it) as one table (one transfer, one schema instead of one per stream)."""
        gathered = self.gather(matchers, start, end, shard, line_filters, deadline, cancelled, after, page_bytes)
        return packed_page(gathered, start, end, line_filters, page_bytes, deadline, cancelled)

    def stream_stats(self, matchers: Iterable[Matcher], start: int, end: int) -> list[tuple[Labels, int, int, int]]:
        """(labels, entries, bytes, chunks) of matching streams with unflushed entries in [start, end):
        as the reference, flushed chunks still retained in memory are left to the index's count."""
        out: list[tuple[Labels, int, int, int]] = []
        for stream in self.matching(matchers):
            lines, size = stream.count(start, end, retained=False)
            if lines:
                out.append((stream.labels, lines, size, len(stream.sealed) + (1 if len(stream.head) else 0)))
        return out

    def select_bytes(self, matchers: Iterable[Matcher], start: int, end: int) -> int:
        """Line bytes a select of [start, end) would carry: unflushed entries and retained copies."""
        return sum(stream.count(start, end)[1] for stream in self.matching(matchers))

    def data_spans(self) -> list[Span]:
        """The time spans the tenant's streams hold entries in here (what a select can read)."""
        return merge_spans(span for stream in self.streams.values() for span in stream.spans())

    def series(self, matchers: Iterable[Matcher], start: int, end: int) -> list[Labels]:
        return [s.labels for s in self.matching(matchers) if s.has_entries(start, end)]

    def expire_retained(self, now_s: float, retain_s: float) -> int:
        """Drop flushed chunks kept for `retain_s` or longer, then the streams left empty."""
        dropped = sum(s.expire_retained(now_s, retain_s) for s in self.streams.values() if s.retained)
        if dropped:
            self.drop_empty()
        return dropped

    def drop_empty(self) -> None:
        for labels in [k for k, s in self.streams.items() if s.is_empty()]:
            del self.streams[labels]
            self.rates.forget(labels)

    def flush_queue_length(self) -> int:
        """Sealed chunks waiting for upload."""
        return sum(len(s.sealed) for s in self.streams.values())


def _batch_slices(streams: list[PushedStream]) -> list[pa.RecordBatch]:
    """Each stream's entries as a CHUNK_SCHEMA batch: a decoded push's streams already are slices
    of one; list-based ones get one Arrow batch for all of them, sliced per stream (zero-copy),
    since building a batch per stream cost more than the data in it."""
    listed = [s for s in streams if not isinstance(s, BatchStream)]
    shared = None
    if listed:
        metadata = None
        if any(s.metadata is not None for s in listed):
            metadata = [md for s in listed for md in (s.metadata or [None] * len(s))]
        shared = entries_batch([t for s in listed for t in s.ts], [x for s in listed for x in s.lines], metadata)
    out: list[pa.RecordBatch] = []
    offset = 0
    for data in streams:
        if isinstance(data, BatchStream):
            out.append(data.batch)
        else:
            assert shared is not None  # built above from the list-based streams
            out.append(shared.slice(offset, len(data)))
            offset += len(data)
    return out


@dataclass(frozen=True)
class Gathered:
    """One stream's part of a select, as `TenantInstance.gather` found it."""

    labels: Labels
    pieces: list[Piece]
    overlapping: int  # chunks (and the head) whose bounds overlap the range
    covered: tuple[str, ...] = ()  # store keys of the flushed chunks whose retained copies the pieces hold


def covered_keys(gathered: list[Gathered], more_after: Labels | None) -> frozenset[str]:
    """The store keys a page answers for: those of its streams' retained chunks (every gathered
    stream up to the page's last, whether or not it kept a line). The querier skips these files:
    the page read the same rows from the copies the ingester keeps after uploading them."""
    return frozenset(
        key for item in gathered if more_after is None or not more_after < item.labels for key in item.covered
    )


def packed_page(
    gathered: list[Gathered],
    start: int,
    end: int,
    line_filters: tuple[ast.LineFilter, ...] = (),
    page_bytes: int = 0,
    deadline: float | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> PackedStreams:
    """The gathered streams' page (`page_of`) packed for another process, with the store keys it
    answers for; a query stopped meanwhile gets nothing shipped (its error instead)."""
    streams, scan, more_after, window = page_of(gathered, start, end, line_filters, page_bytes, deadline, cancelled)
    check_deadline(deadline, cancelled)
    return PackedStreams.pack(streams, scan, more_after, window, covered_keys(gathered, more_after))


def page_of(
    gathered: list[Gathered],
    start: int,
    end: int,
    line_filters: tuple[ast.LineFilter, ...] = (),
    page_bytes: int = 0,
    deadline: float | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> tuple[list[tuple[Labels, list[Piece]]], IngesterScan, Labels | None, tuple[int, int]]:
    """The gathered streams as a select's answer: with `page_bytes`, stopping once the page holds
    that many line bytes; the third value is the last stream of a page with more to come (the next
    page's `after`), None when none remain. A reader then holds one page of a select over the
    ingesters' whole memory, not all of it. The fourth is the range, which packed blocks are read with.

    With line filters the pieces are decoded and filtered here (the querier gets the few lines
    kept); without, packed blocks go as they are (compressed) and the querier decodes them and
    counts their entries in range in the scan."""
    if line_filters:
        return _filtered_page(gathered, start, end, line_filters, page_bytes, deadline, cancelled)
    out: list[tuple[Labels, list[Piece]]] = []
    head_lines = head_bytes = chunks = 0
    held = 0
    for stream in gathered:
        if page_bytes and held >= page_bytes:
            return out, IngesterScan(head_lines, head_bytes, 0, 0, chunks), out[-1][0], (start, end)
        check_deadline(deadline, cancelled)
        chunks += stream.overlapping
        pieces = stream.pieces
        if not pieces:
            continue
        for _, piece in pieces:
            if isinstance(piece, pa.Table):
                head_lines, head_bytes = head_lines + piece.num_rows, head_bytes + line_bytes(piece)
            held += (piece.raw_bytes if isinstance(piece, PackedBlock) else line_bytes(piece)) if page_bytes else 0
        out.append((stream.labels, pieces))
    return out, IngesterScan(head_lines, head_bytes, 0, 0, chunks), None, (start, end)


# Decoding and filtering streams for a select with line filters: Arrow's decode and substring
# kernels run without the GIL, so streams filtered side by side use both cores, where one select
# thread walking every stream used ~0.7 of one (a 1M-line `|= "error"` before the flush).
_FILTER_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="select-filter")
_FILTERED_AHEAD = 4  # streams in flight beyond the one being taken; at most these are filtered past a full page


@dataclass(frozen=True)
class _FilteredStream:
    kept: pa.Table | None
    head_lines: int
    head_bytes: int
    chunk_lines: int
    chunk_bytes: int


def _filter_stream(
    pieces: list[Piece],
    start: int,
    end: int,
    line_filters: tuple[ast.LineFilter, ...],
    deadline: float | None,
    cancelled: Callable[[], bool] | None,
) -> _FilteredStream:
    check_deadline(deadline, cancelled)
    head_lines = head_bytes = chunk_lines = chunk_bytes = 0
    tables = [_rows(piece, start, end) for _, piece in pieces]
    for (from_head, _), table in zip(pieces, tables):
        if from_head:
            head_lines, head_bytes = head_lines + table.num_rows, head_bytes + line_bytes(table)
        else:
            chunk_lines, chunk_bytes = chunk_lines + table.num_rows, chunk_bytes + line_bytes(table)
    # each piece filtered alone: joining them first copied every line once more
    kept = [part for part in (apply_line_filters(t, line_filters) for t in tables) if part.num_rows]
    table = (pa.concat_tables(kept) if len(kept) > 1 else kept[0]) if kept else None
    return _FilteredStream(table, head_lines, head_bytes, chunk_lines, chunk_bytes)


def _filtered_page(
    gathered: list[Gathered],
    start: int,
    end: int,
    line_filters: tuple[ast.LineFilter, ...],
    page_bytes: int,
    deadline: float | None,
    cancelled: Callable[[], bool] | None,
) -> tuple[list[tuple[Labels, list[Piece]]], IngesterScan, Labels | None, tuple[int, int]]:
    """`page_of` with line filters: the kept lines of each stream, streams filtered a few at a
    time on the pool and taken in order; a full page drops the ones not started yet."""
    out: list[tuple[Labels, list[Piece]]] = []
    head_lines = head_bytes = chunk_lines = chunk_bytes = chunks = 0
    held = 0
    streams = iter(gathered)
    in_flight: collections.deque[tuple[Gathered, Future[_FilteredStream] | None]] = collections.deque()

    def submit_next() -> bool:
        stream = next(streams, None)
        if stream is None:
            return False
        job = (
            _FILTER_POOL.submit(_filter_stream, stream.pieces, start, end, line_filters, deadline, cancelled)
            if stream.pieces
            else None
        )
        in_flight.append((stream, job))
        return True

    try:
        while len(in_flight) <= _FILTERED_AHEAD and submit_next():
            pass
        while in_flight:
            if page_bytes and held >= page_bytes:
                scan = IngesterScan(head_lines, head_bytes, chunk_lines, chunk_bytes, chunks)
                return out, scan, out[-1][0], (start, end)
            check_deadline(deadline, cancelled)
            stream, job = in_flight.popleft()
            submit_next()
            chunks += stream.overlapping
            if job is None:
                continue
            done = job.result()
            head_lines, head_bytes = head_lines + done.head_lines, head_bytes + done.head_bytes
            chunk_lines, chunk_bytes = chunk_lines + done.chunk_lines, chunk_bytes + done.chunk_bytes
            if done.kept is not None:
                out.append((stream.labels, [(True, done.kept)]))
                held += line_bytes(done.kept) if page_bytes else 0
        return out, IngesterScan(head_lines, head_bytes, chunk_lines, chunk_bytes, chunks), None, (start, end)
    finally:
        for _, job in in_flight:  # a full page or an error: what has not started never runs
            if job is not None:
                job.cancel()


NOTHING_SCANNED = IngesterScan()

# An answer's rows up to this size cross as one Arrow IPC message inside the pickle. Ray's Arrow
# reducer walks a table's arrays in Python: ~160 us to pickle the light tenant's 60 lines and ~36 us
# to load them, against ~5 and ~7 us as IPC. That Python ran on the ingester's call thread, taking
# turns at the GIL with the heavy selects' answers, and was the largest leg of the light query's
# slowest calls under issue 16's heavy loop (the answer's way back: 4-12 ms). Larger answers keep
# the reducer, which writes a slice's bytes once, straight into the object store.
INLINE_TABLE_BYTES = 256 << 10
_INLINE_WRITE = pa.ipc.IpcWriteOptions(use_threads=False)
_INLINE_READ = pa.ipc.IpcReadOptions(use_threads=False)


def _table_message(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_INLINE_WRITE) as writer:
        writer.write_table(table)
    message: bytes = sink.getvalue().to_pybytes()
    return message


def _table_of_message(message: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(message), options=_INLINE_READ).read_all()


class PackedStreams:
    """A select's answer for another process: several streams' entries, with what the ingester
    scanned to find them (`scan`, for the query stats). Windows of rows go as the chunks of one
    table (rows of a stream contiguous), packed blocks as they are, compressed; `unpack` decodes
    the blocks, keeps their entries in `window` and joins each stream's pieces in order."""

    def __init__(
        self,
        labels: list[Labels],
        lengths: list[int],
        table: pa.Table | None,
        scan: IngesterScan = NOTHING_SCANNED,
        more_after: Labels | None = None,
        blocks: list[list[tuple[bool, PackedBlock]]] | None = None,
        window: tuple[int, int] = (0, 0),
        covered: frozenset[str] = frozenset(),
    ):
        self.labels = labels
        self.lengths = lengths  # rows of each stream in `table` (after its blocks)
        self.table = table
        self.scan = scan
        self.more_after = more_after  # a page with more to come: its last stream (select_page)
        self.blocks = blocks  # per stream: (from the head, block), in order; None when none has any
        self.window = window
        # store keys of flushed chunks this answer holds the retained copies of (its page's streams)
        self.covered = covered

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self.table is not None and self.table.nbytes <= INLINE_TABLE_BYTES:
            state["table"] = _table_message(self.table)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if isinstance(state["table"], bytes):
            state["table"] = _table_of_message(state["table"])
        self.__dict__.update(state)

    @classmethod
    def pack(
        cls,
        streams: list[tuple[Labels, list[Piece]]],
        scan: IngesterScan = NOTHING_SCANNED,
        more_after: Labels | None = None,
        window: tuple[int, int] = (0, 0),
        covered: frozenset[str] = frozenset(),
    ) -> PackedStreams:
        """The streams' windows of rows as the chunks of one table, without copying a row.

        A window is often a slice of a head. Arrow's own pickling would send a slice's whole
        buffers, but a select's answer leaves through Ray, whose Arrow reducer sends only the bytes a
        slice views (buffer-level slices, offsets rebased), written once, straight into the object
        store (tests/test_select_wire.py). Copying each window out here first cost the ingester a
        second copy of every answer: ~100 MB per half-hour sub-query at 1M lines."""
        tables: list[pa.Table] = []
        lengths: list[int] = []
        blocks: list[list[tuple[bool, PackedBlock]]] = []
        for _, pieces in streams:
            rows = [piece for _, piece in pieces if not isinstance(piece, PackedBlock)]
            assert len(rows) <= 1 and (not rows or pieces[-1][1] is rows[0]), "a window of rows comes last"
            blocks.append([(head, piece) for head, piece in pieces if isinstance(piece, PackedBlock)])
            lengths.append(rows[0].num_rows if rows else 0)
            tables.extend(rows)
        table = pa.concat_tables(tables) if tables else None
        return cls(
            [labels for labels, _ in streams],
            lengths,
            table,
            scan,
            more_after,
            blocks if any(blocks) else None,
            window,
            covered,
        )

    def unpack(self) -> list[tuple[Labels, pa.Table]]:
        """Each stream's entries (streams left without any in the window are left out); the
        entries of packed blocks in the window are added to `scan` (once)."""
        out: list[tuple[Labels, pa.Table]] = []
        offset = 0
        start, end = self.window
        head_lines = head_bytes = chunk_lines = chunk_bytes = 0
        for position, (labels, length) in enumerate(zip(self.labels, self.lengths)):
            batches: list[pa.RecordBatch] = []
            for from_head, block in self.blocks[position] if self.blocks is not None else ():
                batch = block.window(start, end)
                size = line_bytes_of(batch.column(1))
                if from_head:
                    head_lines, head_bytes = head_lines + batch.num_rows, head_bytes + size
                else:
                    chunk_lines, chunk_bytes = chunk_lines + batch.num_rows, chunk_bytes + size
                if batch.num_rows:
                    batches.append(batch)
            rows = self.table.slice(offset, length) if self.table is not None and length else None
            offset += length
            if not batches:
                if rows is not None:
                    out.append((labels, rows))
                continue
            if rows is not None:
                batches.extend(rows.to_batches())
            out.append((labels, pa.Table.from_batches(batches, schema=CHUNK_SCHEMA)))
        if self.blocks is not None:
            self.scan = self.scan + IngesterScan(head_lines, head_bytes, chunk_lines, chunk_bytes, 0)
            self.blocks = None  # decoded: a second unpack reads none (and counts none) again
        return out


def pack_due(
    item: HeadBlock | SealedChunk, block_bytes: int, lock: AbstractContextManager[object] | None = None
) -> None:
    """Compress what a push left due: a head's open part into blocks, a chunk cut on append into its
    sealed (sorted, de-duplicated, packed) form, which also releases the pushes its rows came from."""
    if isinstance(item, HeadBlock):
        item.pack(block_bytes, lock)
    else:
        item.blocks  # noqa: B018 - reading a cut chunk's blocks seals it


def _rows(piece: PackedBlock | pa.Table, start: int, end: int) -> pa.Table:
    """A piece's entries in [start, end) as a table (a packed block decoded)."""
    if isinstance(piece, PackedBlock):
        return pa.Table.from_batches([piece.window(start, end)])
    return piece


# A part referencing this much more buffer than its rows need is copied before a checkpoint pickles it
# (ingester._own_table: plain pickling sends a slice's whole buffers).
SLACK = 1.25
