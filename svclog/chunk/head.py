"""HeadBlock: the open, appendable tail of one stream, plus sealed chunks not yet flushed."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.format import CHUNK_SCHEMA


def sort_dedupe(table: pa.Table) -> pa.Table:
    """Sort by (ts, line) and drop exact duplicate entries (same timestamp and line).

    Replicas and WAL replays can deliver an entry twice; the reference keeps one.
    """
    if table.num_rows < 2:
        return table.combine_chunks()
    table = table.combine_chunks()
    ts = table.column("ts").chunk(0)
    if not pc.all(pc.greater_equal(ts.slice(1), ts.slice(0, len(ts) - 1))).as_py():
        table = table.take(pc.sort_indices(ts))  # int64 sort: cheap; lines only break ties below
        ts = table.column("ts").chunk(0)
    if not pc.any(pc.equal(ts.slice(1), ts.slice(0, len(ts) - 1))).as_py():
        return table  # strictly increasing: nothing to de-duplicate, order already canonical
    table = table.take(pc.sort_indices(table, sort_keys=[("ts", "ascending"), ("line", "ascending")]))
    table = table.combine_chunks()
    ts = table.column("ts").chunk(0)
    line = table.column("line").chunk(0)
    same_ts = pc.equal(ts.slice(1), ts.slice(0, len(ts) - 1))
    if not pc.any(same_ts).as_py():
        return table
    same = pc.and_(same_ts, pc.equal(line.slice(1), line.slice(0, len(line) - 1)))
    keep = pa.concat_arrays([pa.array([True]), pc.invert(same)])
    return table.filter(keep)


@dataclass
class SealedChunk:
    """A cut chunk waiting to be flushed: sorted, de-duplicated entries."""

    table: pa.Table
    min_ts: int
    max_ts: int
    raw_bytes: int

    @classmethod
    def from_table(cls, table: pa.Table) -> "SealedChunk":
        table = sort_dedupe(table)
        ts = table.column("ts")
        return cls(table, int(pc.min(ts).as_py()), int(pc.max(ts).as_py()),
                   int(pc.sum(pc.binary_length(table.column("line"))).as_py() or 0))


def entries_batch(ts: list[int], lines: list[str], metadata: list | None) -> pa.RecordBatch:
    """Entries as one CHUNK_SCHEMA record batch (metadata: per-entry pair lists, or None)."""
    md_type = CHUNK_SCHEMA.field("metadata").type
    return pa.record_batch(
        [pa.array(ts, pa.int64()), pa.array(lines, pa.string()),
         pa.array(metadata, md_type) if metadata is not None else pa.nulls(len(ts), md_type)],
        schema=CHUNK_SCHEMA)


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

    def __len__(self) -> int:
        return self._count

    def append_batch(self, batch: pa.RecordBatch, min_ts: int, max_ts: int, raw_bytes: int,
                     shared: bool = False) -> None:
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
            self._table = table
        return self._table

    def compact(self) -> None:
        """Copy shared slices into this head's own buffers, releasing the pushes they came from."""
        if not self._shared:
            return
        table = self.table()
        if self._shared:  # a single part was left as it was: copy it explicitly
            table = table.take(pa.array(np.arange(table.num_rows, dtype=np.int64)))
            self._parts, self._table = table.to_batches(), table
            self._shared = False

    def seal(self) -> SealedChunk:
        return SealedChunk.from_table(self.table())
