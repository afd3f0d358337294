"""MemoryStream: one stream's data in an ingester: head block, sealed chunks waiting for flush, and
flushed chunks kept queryable for the retain period (`retained`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from svclog.chunk.head import HeadBlock, SealedChunk
from svclog.chunk.pushdown import BlockProbe
from svclog.model import Labels


class MemoryStream:
    def __init__(self, labels: Labels, now_ns: int):
        self.labels = labels
        self.fingerprint = labels.fingerprint()
        self.head = HeadBlock()
        self.sealed: list[SealedChunk] = []
        # flushed chunks still answered from memory, with when they were flushed (monotonic seconds):
        # a querier's index listing may predate the flush (see storage.index.LISTING_TTL_S)
        self.retained: list[tuple[SealedChunk, float]] = []
        self.head_created_ns = now_ns
        self.last_append_ns = now_ns

    def append(
        self, batch: pa.RecordBatch, min_ts: int, max_ts: int, raw_bytes: int, now_ns: int, shared: bool = False
    ) -> None:
        if not len(self.head):
            self.head_created_ns = now_ns
        self.head.append_batch(batch, min_ts, max_ts, raw_bytes, shared)
        self.last_append_ns = now_ns

    def cut(self) -> SealedChunk | None:
        """Seal the head into a chunk waiting for flush."""
        if not len(self.head):
            return None
        chunk = self.head.seal()
        self.sealed.append(chunk)
        self.head = HeadBlock()
        return chunk

    def cut_reason(self, now_ns: int, target_bytes: int, idle_ns: int, max_age_ns: int) -> str | None:
        if not len(self.head):
            return None
        if self.head.raw_bytes >= target_bytes:
            return "full"
        if now_ns - self.last_append_ns >= idle_ns:
            return "idle"
        if now_ns - self.head_created_ns >= max_age_ns:
            return "max_age"
        return None

    def flushed(self, chunks: list[SealedChunk], now_s: float, retain_s: float) -> None:
        """`chunks` are in the store: no longer waiting for flush, kept for `retain_s` seconds."""
        self.sealed = [c for c in self.sealed if all(c is not f for f in chunks)]
        if retain_s > 0:
            self.retained.extend((c, now_s) for c in chunks)

    def expire_retained(self, now_s: float, retain_s: float) -> int:
        """Drop flushed chunks retained for `retain_s` seconds or more; returns how many went."""
        kept = [(c, at) for c, at in self.retained if now_s - at < retain_s]
        dropped = len(self.retained) - len(kept)
        self.retained = kept
        return dropped

    def is_empty(self) -> bool:
        return not len(self.head) and not self.sealed and not self.retained

    def tables(self, start: int, end: int, retained: bool = True) -> list[pa.Table]:
        """Entries with start <= ts < end from the chunks and the head (unsorted across parts);
        without the retained (already flushed) chunks when `retained` is False."""
        sealed, head = self.windows(start, end, retained)
        return [t for t in (*sealed, head) if t is not None and t.num_rows]

    def windows(
        self, start: int, end: int, retained: bool = True, probe: BlockProbe | None = None
    ) -> tuple[list[pa.Table], pa.Table | None]:
        """Entries with start <= ts < end of each chunk (retained, then sealed: seal order) whose bounds
        overlap the range, and of the head (None when it does not overlap); a window may be empty.
        With a `probe`, a flushed chunk gives only the rows of blocks its token index cannot rule
        out (every line the probe's filters keep is among them)."""
        chunks = [c for c, _ in self.retained] + self.sealed if retained else self.sealed
        sealed = [_chunk_window(c, start, end, probe) for c in chunks if c.min_ts < end and c.max_ts >= start]
        head = None
        if len(self.head) and self.head.min_ts < end and self.head.max_ts >= start:
            whole = self.head.min_ts >= start and self.head.max_ts < end
            table = self.head.table()
            head = table if whole else _time_window(table, start, end, sorted_=False)
        return sealed, head

    def spans(self) -> list[tuple[int, int]]:
        """[min_ts, max_ts] of every part a select reads (head, sealed and retained chunks)."""
        found = [(c.min_ts, c.max_ts) for c, _ in self.retained] + [(c.min_ts, c.max_ts) for c in self.sealed]
        if len(self.head):
            found.append((self.head.min_ts, self.head.max_ts))
        return found

    def snapshot(self) -> list[pa.Table]:
        """The unflushed entries (what a WAL checkpoint keeps): retained chunks are in the store."""
        parts = [c.table for c in self.sealed]
        if len(self.head):
            parts.append(self.head.table())
        return parts

    @property
    def memory_bytes(self) -> int:
        return self.head.raw_bytes + sum(c.raw_bytes for c in self.sealed) + sum(c.raw_bytes for c, _ in self.retained)


def line_bytes(table: pa.Table) -> int:
    """Bytes of the `line` column, read from the first and last string offsets: O(1) per Arrow
    chunk, as the stats must cost nothing per line."""
    total = 0
    for lines in table.column("line").chunks:
        if len(lines):
            wide = pa.types.is_large_string(lines.type) or pa.types.is_large_binary(lines.type)
            offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64 if wide else np.int32)
            total += int(offsets[lines.offset + len(lines)] - offsets[lines.offset])
    return total


def _chunk_window(chunk: SealedChunk, start: int, end: int, probe: BlockProbe | None) -> pa.Table:
    """A chunk's rows in [start, end), only those in the time bounds of blocks `probe` does not
    rule out when the chunk carries its written layout (a block's rows lie within its bounds, so
    rows sharing a bound with a neighbour block are merely kept too)."""
    layout = chunk.layout
    index = layout.index if layout is not None and probe is not None else None
    if index is None or probe is None or layout is None or any(b is None for b in layout.bounds):
        return _time_window(chunk.table, start, end, sorted_=True)
    memo = chunk.probed
    if memo is not None and probe.key is not None and memo[0] == probe.key:
        possible = memo[1]
    else:
        possible = probe.may_match(index)
        chunk.probed = (probe.key, possible)
    spans = [(max(b[0], start), min(b[1] + 1, end)) for b, ok in zip(layout.bounds, possible) if ok and b is not None]
    spans = [(lo, hi) for lo, hi in spans if lo < hi]
    if not spans:
        return chunk.table.slice(0, 0)
    ts = chunk.table.column("ts").to_numpy()
    rows = np.searchsorted(ts, np.array(spans, dtype=np.int64).ravel(), side="left").reshape(-1, 2)
    pieces: list[list[int]] = []
    for lo, hi in rows.tolist():  # blocks ascend: merge touching or overlapping row ranges
        if hi <= lo:
            continue
        if pieces and lo <= pieces[-1][1]:
            pieces[-1][1] = max(pieces[-1][1], hi)
        else:
            pieces.append([lo, hi])
    if not pieces:
        return chunk.table.slice(0, 0)
    parts = [chunk.table.slice(lo, hi - lo) for lo, hi in pieces]
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _time_window(table: pa.Table, start: int, end: int, *, sorted_: bool) -> pa.Table:
    """Rows with start <= ts < end, as a zero-copy slice where they are one run of rows: always in
    sorted chunks, and in a head whenever its pushes arrived in time order (the usual case).
    Slices share their chunk's buffers, and Ray's serializer sends only the bytes a slice views (see
    `PackedStreams.pack`), so a window costs no copy in the ingester."""
    values = table.column("ts").to_numpy()
    if sorted_:
        lo, hi = np.searchsorted(values, [start, end], side="left")
    else:
        rows = np.flatnonzero((values >= start) & (values < end))
        if not len(rows):
            return table.slice(0, 0)
        lo, hi = int(rows[0]), int(rows[-1]) + 1
        if hi - lo != len(rows):  # out-of-order pushes interleave: pick the rows
            return table.take(pa.array(rows))
    return table if (lo, hi) == (0, table.num_rows) else table.slice(int(lo), int(hi - lo))
