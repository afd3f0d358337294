"""MemoryStream: one stream's unflushed data in an ingester (head block + sealed chunks)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.head import HeadBlock, SealedChunk
from svclog.model import Labels


class MemoryStream:
    def __init__(self, labels: Labels, now_ns: int):
        self.labels = labels
        self.fingerprint = labels.fingerprint()
        self.head = HeadBlock()
        self.sealed: list[SealedChunk] = []
        self.head_created_ns = now_ns
        self.last_append_ns = now_ns

    def append(self, batch: pa.RecordBatch, min_ts: int, max_ts: int, raw_bytes: int, now_ns: int,
               shared: bool = False) -> None:
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

    def is_empty(self) -> bool:
        return not len(self.head) and not self.sealed

    def tables(self, start: int, end: int) -> list[pa.Table]:
        """Entries with start <= ts < end from sealed chunks and the head (unsorted across parts)."""
        parts = [c.table for c in self.sealed if c.min_ts < end and c.max_ts >= start]
        if len(self.head) and self.head.min_ts < end and self.head.max_ts >= start:
            parts.append(self.head.table())
        out = []
        for table in parts:
            out.append(_time_window(table, start, end, sorted_=table is not parts[-1] or not len(self.head)))
        return [t for t in out if t.num_rows]

    def snapshot(self) -> list[pa.Table]:
        parts = [c.table for c in self.sealed]
        if len(self.head):
            parts.append(self.head.table())
        return parts

    @property
    def memory_bytes(self) -> int:
        return self.head.raw_bytes + sum(c.raw_bytes for c in self.sealed)


def _time_window(table: pa.Table, start: int, end: int, *, sorted_: bool) -> pa.Table:
    """Rows with start <= ts < end; sealed chunks are sorted, so a zero-copy slice does."""
    ts = table.column("ts")
    if sorted_:
        values = ts.to_numpy()
        lo, hi = np.searchsorted(values, [start, end], side="left")
        return table if (lo, hi) == (0, table.num_rows) else table.slice(int(lo), int(hi - lo))
    return table.filter(pc.and_(pc.greater_equal(ts, start), pc.less(ts, end)))
