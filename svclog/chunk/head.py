"""HeadBlock: the open, appendable tail of one stream, plus sealed chunks not yet flushed."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.format import CHUNK_SCHEMA, ChunkLayout


def sort_dedupe(table: pa.Table) -> pa.Table:
    """Order entries by timestamp and drop later copies of an entry (same timestamp and line).

    Rows that share a timestamp keep their order in `table` (the sort is stable): callers
    concatenate in push order, and the reference returns such entries as they were written.
    Replicas and WAL replays deliver some entries twice; the first copy is kept.
    """
    table = table.combine_chunks()
    if table.num_rows < 2:
        return table
    ts = table.column("ts").to_numpy()
    if bool(np.any(ts[1:] < ts[:-1])):
        order = np.argsort(ts, kind="stable")
        table, ts = table.take(pa.array(order)), ts[order]
    drop = _later_copies(ts, table.column("line"))
    if drop is None:
        return table
    keep = np.ones(table.num_rows, dtype=bool)
    keep[drop] = False
    return table.filter(pa.array(keep))


def _later_copies(ts: np.ndarray, line: pa.ChunkedArray) -> np.ndarray | None:
    """Row numbers of entries that repeat an earlier row's (timestamp, line); `ts` is sorted.

    Only rows in a run of equal timestamps can repeat one, so only those are sorted by line
    (a stable sort: the earliest copy of an entry comes first among its equals)."""
    tied = ts[1:] == ts[:-1]
    if not tied.any():
        return None
    in_run = np.zeros(len(ts), dtype=bool)
    in_run[1:] |= tied
    in_run[:-1] |= tied
    rows = np.flatnonzero(in_run)
    run_ts, run_line = ts[rows], line.take(pa.array(rows)).combine_chunks()
    by_key = pc.sort_indices(
        pa.table({"ts": run_ts, "line": run_line}), sort_keys=[("ts", "ascending"), ("line", "ascending")]
    ).to_numpy()
    key_ts, key_line = run_ts[by_key], run_line.take(pa.array(by_key))
    same_line = pc.equal(key_line.slice(1), key_line.slice(0, len(key_line) - 1))
    same = (key_ts[1:] == key_ts[:-1]) & same_line.to_numpy(zero_copy_only=False)
    if not same.any():
        return None
    return rows[by_key[1:][same]]


_last_seal_ns = 0


def next_seal_ns() -> int:
    """A strictly increasing wall-clock stamp for sealed chunks: among one stream's chunks it
    orders entries that share a timestamp (an earlier-sealed chunk holds earlier pushes)."""
    global _last_seal_ns
    _last_seal_ns = max(time.time_ns(), _last_seal_ns + 1)
    return _last_seal_ns


@dataclass
class SealedChunk:
    """A cut chunk waiting to be flushed: entries sorted by timestamp (push order among equal
    ones), de-duplicated; `sealed_ns` orders it among the stream's other chunks."""

    table: pa.Table
    min_ts: int
    max_ts: int
    raw_bytes: int
    sealed_ns: int = 0
    # the written chunk's block bounds and token index, once flushed as one chunk: the ingester's
    # selects of the retained copy then skip blocks a needle cannot be in, as store reads do
    layout: ChunkLayout | None = field(default=None, compare=False, repr=False)
    # (probe key, blocks it may match) of the last probe asked: a query's time windows ask again
    probed: tuple[object, np.ndarray] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_table(cls, table: pa.Table, sealed_ns: int | None = None) -> SealedChunk:
        table = sort_dedupe(table)
        ts = table.column("ts")
        return cls(
            table,
            int(pc.min(ts).as_py()),
            int(pc.max(ts).as_py()),
            int(pc.sum(pc.binary_length(table.column("line"))).as_py() or 0),
            next_seal_ns() if sealed_ns is None else sealed_ns,
        )


class PendingChunk(SealedChunk):
    """A head cut on the append that filled it, sealed (joined, sorted, de-duplicated) when its
    table is first read: by the flush's upload, outside the ingester's lock, or by a select.

    Sealing on append held the lock for every head one push filled (~2-20 ms each, several
    at once when streams grow alike) and the push that filled them waited for all of it. The
    bounds and seal stamp are fixed at the cut; the parts are immutable, so two threads that
    seal at once build equal tables."""

    def __init__(self, parts: list[pa.RecordBatch], min_ts: int, max_ts: int, raw_bytes: int):
        self._parts: list[pa.RecordBatch] | None = parts
        self._table: pa.Table | None = None
        self._raw_bytes = raw_bytes  # the head's count until sealed (de-duplication may lower it)
        self.min_ts, self.max_ts = min_ts, max_ts  # de-duplication keeps a first copy: bounds hold
        self.sealed_ns = next_seal_ns()

    @property
    def table(self) -> pa.Table:
        table = self._table
        if table is None:
            parts = self._parts
            if parts is None:  # another thread sealed it meanwhile (it sets the table first)
                sealed = self._table
                assert sealed is not None
                return sealed
            table = sort_dedupe(pa.Table.from_batches(parts, schema=CHUNK_SCHEMA))
            self._raw_bytes = int(pc.sum(pc.binary_length(table.column("line"))).as_py() or 0)
            self._table, self._parts = table, None
        return table

    @table.setter
    def table(self, value: pa.Table) -> None:
        self._table, self._parts = value, None

    @property
    def raw_bytes(self) -> int:
        return self._raw_bytes

    @raw_bytes.setter
    def raw_bytes(self, value: int) -> None:
        self._raw_bytes = value


def entries_batch(ts: list[int], lines: list[str], metadata: list | None) -> pa.RecordBatch:
    """Entries as one CHUNK_SCHEMA record batch (metadata: per-entry pair lists, or None)."""
    md_type = CHUNK_SCHEMA.field("metadata").type
    return pa.record_batch(
        [
            pa.array(ts, pa.int64()),
            pa.array(lines, pa.string()),
            pa.array(metadata, md_type) if metadata is not None else pa.nulls(len(ts), md_type),
        ],
        schema=CHUNK_SCHEMA,
    )


class HeadBlock:
    """Appendable entries of one stream, kept as Arrow record batches (one per append).

    Python lists of strings cost several times the raw bytes; Arrow buffers cost the bytes.
    The concatenated table is built lazily and cached until the next append.
    """

    def __init__(self) -> None:
        self._parts: list[pa.RecordBatch] = []
        self._count = 0
        self.raw_bytes = 0
        self.min_ts = 0
        self.max_ts = 0
        self._table: pa.Table | None = None
        self._shared = False
        self._owned = 0  # the first parts are in buffers of their own (copied by compact or table)

    def __len__(self) -> int:
        return self._count

    def append_batch(
        self, batch: pa.RecordBatch, min_ts: int, max_ts: int, raw_bytes: int, shared: bool = False
    ) -> None:
        """Append entries already in CHUNK_SCHEMA form. `shared`: the batch is a zero-copy slice of
        a larger one (a whole push), whose buffers it keeps alive until `compact` copies it out."""
        if not self._count:
            self.min_ts, self.max_ts = min_ts, max_ts
        else:
            self.min_ts, self.max_ts = min(self.min_ts, min_ts), max(self.max_ts, max_ts)
        self._parts.append(batch)
        self._count += batch.num_rows
        self.raw_bytes += raw_bytes
        self._table = None
        self._shared = self._shared or shared

    def table(self) -> pa.Table:
        if self._table is None:
            if len(self._parts) > 1:
                self._shared = False  # combining copies every part into fresh buffers
            table = pa.Table.from_batches(self._parts, schema=CHUNK_SCHEMA).combine_chunks()
            # keep one batch: the next append concatenates two parts, not hundreds
            self._parts = table.to_batches() or []
            self._owned = len(self._parts) if not self._shared else 0
            self._table = table
        return self._table

    def parts(self) -> list[pa.RecordBatch]:
        """The appended batches as they are (immutable; no copy, unlike `table`): a WAL checkpoint
        takes these under the ingester's lock and copies them after releasing it."""
        return list(self._parts)

    def compact(self, lock: AbstractContextManager[object] | None = None) -> None:
        """Copy the shared slices appended since the last compaction into buffers of this head's
        own, releasing the pushes they came from. Parts copied before are left as they are: the
        flush tick compacts every head, and copying each head whole again every tick cost time in
        proportion to the head rather than to what arrived since.

        `lock` guards the head (the ingester's): held to read the parts and to swap the copy in,
        not while copying (a copy under it held up every push, 30-80 ms per head on a busy
        machine). A head changed meanwhile by anything but appends keeps its parts (next tick)."""
        guard = lock if lock is not None else nullcontext()
        with guard:
            if not self._shared:
                return
            first, fresh = self._owned, self._parts[self._owned :]
        if not fresh:
            return
        copied = pa.RecordBatch.from_arrays(
            [pa.concat_arrays([b.column(i) for b in fresh]) for i in range(len(CHUNK_SCHEMA))],
            schema=CHUNK_SCHEMA,
        )  # concat_arrays writes new buffers even for a single slice
        with guard:
            end = first + len(fresh)
            current = self._parts[first:end]
            if self._owned != first or len(current) != len(fresh) or any(a is not b for a, b in zip(current, fresh)):
                return
            self._parts = self._parts[:first] + [copied] + self._parts[end:]
            self._owned = first + 1
            self._shared = len(self._parts) > self._owned  # appended while copying: shared, as far as known
            self._table = None

    def seal(self) -> SealedChunk:
        """This head as a chunk; the joining, sorting and de-duplication wait for its first read."""
        if self._table is not None:  # joined already (a select read it): nothing left to defer
            return SealedChunk.from_table(self._table)
        return PendingChunk(list(self._parts), self.min_ts, self.max_ts, self.raw_bytes)
