"""TenantInstance: one tenant's streams inside an ingester, found by label set, and its stream limit."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.head import entries_batch
from svclog.chunk.pushdown import apply_line_filters, block_probe
from svclog.ingester.payload import BatchStream, PushedStream
from svclog.ingester.stream import MemoryStream, line_bytes
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
    def __init__(self, tenant: str, max_streams: int | Callable[[], int] = 0, chunk_target_size: int = 0):
        self.tenant = tenant
        self._max_streams = max_streams  # a number, or a callable read when new streams arrive
        self.chunk_target_size = chunk_target_size  # a head is cut when it reaches this (0: never on append)
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

    def push(self, streams: Iterable[PushedStream], now_ns: int) -> tuple[int, int]:
        """Append entries; returns (lines, bytes). Limits are the caller's (`admit`): WAL replay skips them."""
        given = [s for s in streams if len(s)]
        if not given:
            return 0, 0
        slices = _batch_slices(given)
        lines = size = 0
        for data, part in zip(given, slices):
            stream = self.streams.get(data.labels)
            if stream is None:
                stream = self.streams[data.labels] = MemoryStream(data.labels, now_ns)
            raw = data.raw_bytes()
            low, high = data.ts_bounds() if isinstance(data, BatchStream) else (min(data.ts), max(data.ts))
            stream.append(part, low, high, raw, now_ns, shared=len(given) > 1 or isinstance(data, BatchStream))
            if self.chunk_target_size and stream.head.raw_bytes >= self.chunk_target_size:
                stream.cut()  # as the reference: a full chunk is cut on append, not at the next flush tick
            lines += len(data)
            size += raw
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
        out, scan, _ = self.select_page(matchers, start, end, shard, line_filters, deadline, cancelled)
        return out, scan

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
    ) -> tuple[list[tuple[Labels, pa.Table]], IngesterScan, Labels | None]:
        """`select_scanned` one page at a time: with `page_bytes`, streams in label order after
        `after`, stopping once the page holds that many line bytes; the third value is the last
        stream of a page with more to come (the next page's `after`), None when none remain. A
        reader then holds one page of a select over the ingesters' whole memory, not all of it."""
        out: list[tuple[Labels, pa.Table]] = []
        head_lines = head_bytes = chunk_lines = chunk_bytes = chunks = 0
        probe = block_probe(line_filters)  # flushed chunks skip blocks by their token index
        streams: Iterable[MemoryStream] = self.matching(matchers, shard)
        if page_bytes:
            streams = sorted((s for s in streams if after is None or after < s.labels), key=lambda s: s.labels.items)
        held = 0
        for stream in streams:
            if page_bytes and held >= page_bytes:
                return out, IngesterScan(head_lines, head_bytes, chunk_lines, chunk_bytes, chunks), out[-1][0]
            check_deadline(deadline, cancelled)
            sealed, head = stream.windows(start, end, probe=probe)
            chunks += len(sealed) + (head is not None)
            tables = [t for t in sealed if t.num_rows]
            for table in tables:
                chunk_lines += table.num_rows
                chunk_bytes += line_bytes(table)
            if head is not None and head.num_rows:
                head_lines += head.num_rows
                head_bytes += line_bytes(head)
                tables.append(head)
            if tables:
                table = apply_line_filters(pa.concat_tables(tables) if len(tables) > 1 else tables[0], line_filters)
                if table.num_rows:
                    out.append((stream.labels, table))
                    held += line_bytes(table) if page_bytes else 0
        return out, IngesterScan(head_lines, head_bytes, chunk_lines, chunk_bytes, chunks), None

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
        return PackedStreams.pack(
            *self.select_page(matchers, start, end, shard, line_filters, deadline, cancelled, after, page_bytes)
        )

    def stream_stats(self, matchers: Iterable[Matcher], start: int, end: int) -> list[tuple[Labels, int, int, int]]:
        """(labels, entries, bytes, chunks) of matching streams with unflushed entries in [start, end):
        as the reference, flushed chunks still retained in memory are left to the index's count."""
        out: list[tuple[Labels, int, int, int]] = []
        for stream in self.matching(matchers):
            tables = stream.tables(start, end, retained=False)
            if tables:
                lines = sum(t.num_rows for t in tables)
                size = sum(int(pc.sum(pc.binary_length(t.column("line"))).as_py() or 0) for t in tables)
                out.append((stream.labels, lines, size, len(stream.sealed) + (1 if len(stream.head) else 0)))
        return out

    def data_spans(self) -> list[Span]:
        """The time spans the tenant's streams hold entries in here (what a select can read)."""
        return merge_spans(span for stream in self.streams.values() for span in stream.spans())

    def series(self, matchers: Iterable[Matcher], start: int, end: int) -> list[Labels]:
        return [s.labels for s in self.matching(matchers) if s.tables(start, end)]

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


NOTHING_SCANNED = IngesterScan()


class PackedStreams:
    """Several streams' entries in one table (rows of a stream contiguous), for cheap transfer,
    with what the ingester scanned to find them (`scan`, for the query stats)."""

    def __init__(
        self,
        labels: list[Labels],
        lengths: list[int],
        table: pa.Table | None,
        scan: IngesterScan = NOTHING_SCANNED,
        more_after: Labels | None = None,
    ):
        self.labels = labels
        self.lengths = lengths
        self.table = table
        self.scan = scan
        self.more_after = more_after  # a page with more to come: its last stream (select_page)

    @classmethod
    def pack(
        cls,
        streams: list[tuple[Labels, pa.Table]],
        scan: IngesterScan = NOTHING_SCANNED,
        more_after: Labels | None = None,
    ) -> PackedStreams:
        """The streams' tables as the chunks of one table, without copying a row.

        A window is often a slice of a head or chunk. Arrow's own pickling would send a slice's whole
        buffers, but a select's answer leaves through Ray, whose Arrow reducer sends only the bytes a
        slice views (buffer-level slices, offsets rebased), written once, straight into the object
        store (tests/test_select_wire.py). Copying each window out here first cost the ingester a
        second copy of every answer: ~100 MB per half-hour sub-query at 1M lines."""
        if not streams:
            return cls([], [], None, scan, more_after)
        table = pa.concat_tables([t for _, t in streams])
        return cls([lb for lb, _ in streams], [t.num_rows for _, t in streams], table, scan, more_after)

    def unpack(self) -> list[tuple[Labels, pa.Table]]:
        out: list[tuple[Labels, pa.Table]] = []
        if self.table is None:  # no streams
            return out
        offset = 0
        for labels, length in zip(self.labels, self.lengths):
            out.append((labels, self.table.slice(offset, length)))
            offset += length
        return out


# A part referencing this much more buffer than its rows need is copied before a checkpoint pickles it
# (ingester._own_table: plain pickling sends a slice's whole buffers).
SLACK = 1.25
