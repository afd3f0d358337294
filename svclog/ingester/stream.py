"""MemoryStream: one stream's data in an ingester: head block, sealed chunks waiting for flush, and
flushed chunks kept queryable for the retain period (`retained`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from svclog.chunk.head import DEFAULT_BLOCK_BYTES, HeadBlock, SealedChunk
from svclog.chunk.packed import PackedBlock, line_bytes_of
from svclog.chunk.pushdown import BlockProbe
from svclog.model import Labels

# A select's piece of a stream: (from the head, not a chunk; a packed block or a window of rows)
Piece = tuple[bool, PackedBlock | pa.Table]


class MemoryStream:
    def __init__(self, labels: Labels, now_ns: int, block_bytes: int = DEFAULT_BLOCK_BYTES):
        self.labels = labels
        self.fingerprint = labels.fingerprint()
        self.head = HeadBlock()
        self.sealed: list[SealedChunk] = []
        # flushed chunks still answered from memory, with when they were flushed (monotonic seconds):
        # a querier's index listing may predate the flush (see storage.index.LISTING_TTL_S)
        self.retained: list[tuple[SealedChunk, float]] = []
        self.head_created_ns = now_ns
        self.last_append_ns = now_ns
        self.block_bytes = block_bytes  # line bytes of a packed block (the chunk file's block size)

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
        chunk = self.head.seal(self.block_bytes)
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

    def pieces(self, start: int, end: int, retained: bool = True, probe: BlockProbe | None = None) -> list[Piece]:
        """What holds entries with start <= ts < end, in the order a select reads them (retained
        chunks, then sealed ones: seal order; then the head: its packed blocks, then its open part).
        Packed blocks come whole when their bounds overlap the range (the reader keeps the range);
        the open part as a window of its rows, left out when empty. With a `probe`, a flushed chunk
        gives only the blocks its token index cannot rule out (every line the probe's filters keep
        is in them). Each piece says whether it is the head's (for the scan counts)."""
        chunks = [c for c, _ in self.retained] + self.sealed if retained else self.sealed
        found: list[Piece] = []
        for chunk in chunks:
            if chunk.min_ts < end and chunk.max_ts >= start:
                found.extend((False, block) for block in _chunk_blocks(chunk, start, end, probe))
        head = self.head
        if len(head) and head.min_ts < end and head.max_ts >= start:
            found.extend((True, block) for block in head.blocks if block.overlaps(start, end))
            table = head.open_table()
            if table.num_rows:
                window = _time_window(table, start, end, sorted_=False)
                if window.num_rows:
                    found.append((True, window))
        return found

    def retained_keys(self, start: int, end: int) -> tuple[str, ...]:
        """The store keys of the retained chunks overlapping [start, end): a select that reads the
        retained copies (`pieces`) answers for those files, and the querier need not read them."""
        return tuple(
            key
            for chunk, _ in self.retained
            if chunk.min_ts < end and chunk.max_ts >= start
            for key in chunk.store_keys
        )

    def parts_overlapping(self, start: int, end: int) -> int:
        """Chunks (retained, sealed, and the head) with bounds overlapping [start, end)."""
        chunks = [c for c, _ in self.retained] + self.sealed
        found = sum(1 for c in chunks if c.min_ts < end and c.max_ts >= start)
        head = self.head
        return found + int(bool(len(head)) and head.min_ts < end and head.max_ts >= start)

    def count(self, start: int, end: int, retained: bool = True) -> tuple[int, int]:
        """(entries, line bytes) with start <= ts < end; a packed block partly in range is decoded."""
        lines = size = 0
        for _, piece in self.pieces(start, end, retained):
            if isinstance(piece, PackedBlock):
                if piece.min_ts >= start and piece.max_ts < end:
                    lines, size = lines + piece.rows, size + piece.raw_bytes
                    continue
                piece = pa.Table.from_batches([piece.window(start, end)])
            lines, size = lines + piece.num_rows, size + line_bytes(piece)
        return lines, size

    def has_entries(self, start: int, end: int) -> bool:
        for _, piece in self.pieces(start, end):
            if not isinstance(piece, PackedBlock) or piece.window(start, end).num_rows:
                return True
        return False

    def spans(self) -> list[tuple[int, int]]:
        """[min_ts, max_ts] of every part a select reads (head, sealed and retained chunks)."""
        found = [(c.min_ts, c.max_ts) for c, _ in self.retained] + [(c.min_ts, c.max_ts) for c in self.sealed]
        if len(self.head):
            found.append((self.head.min_ts, self.head.max_ts))
        return found

    @property
    def memory_bytes(self) -> int:
        return self.head.raw_bytes + sum(c.raw_bytes for c in self.sealed) + sum(c.raw_bytes for c, _ in self.retained)


def line_bytes(table: pa.Table) -> int:
    """Bytes of the `line` column, O(1) per Arrow chunk."""
    return sum(line_bytes_of(lines) for lines in table.column("line").chunks)


def _chunk_blocks(chunk: SealedChunk, start: int, end: int, probe: BlockProbe | None) -> list[PackedBlock]:
    """The chunk's blocks that overlap [start, end) and, when the chunk carries its written layout
    (its blocks are these blocks), that `probe` does not rule out by their token filters."""
    blocks = [block for block in chunk.blocks if block.overlaps(start, end)]
    layout = chunk.layout
    index = layout.index if layout is not None and probe is not None else None
    if index is None or probe is None or len(index) != len(chunk.blocks):
        return blocks
    memo = chunk.probed
    if memo is not None and probe.key is not None and memo[0] == probe.key:
        possible = memo[1]
    else:
        possible = probe.may_match(index)
        chunk.probed = (probe.key, possible)
    return [block for block, ok in zip(chunk.blocks, possible) if ok and block.overlaps(start, end)]


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
