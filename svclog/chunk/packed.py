"""PackedBlock: a run of one stream's entries kept compressed in memory (an LZ4 Arrow IPC message).

An ingester holds what it was pushed this way once a head's open part reaches a block's size, and
keeps sealed chunks as such blocks until they are flushed: log lines take ~3x less memory with LZ4,
which decodes at over 1 GB/s without the GIL. A select ships the blocks as they are, so the bytes
crossing to the querier are the compressed ones too; the querier decodes them (PackedStreams.unpack).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from svclog.chunk.format import CHUNK_SCHEMA, in_range, line_bytes_of, split_blocks

# one thread: a block is small, and Arrow's pool hands each buffer to another thread otherwise
# (more wake-ups than work, as measured for push payloads in svclog/ingester/payload.py)
_WRITE = pa.ipc.IpcWriteOptions(compression="lz4", use_threads=False)
_READ = pa.ipc.IpcReadOptions(use_threads=False)


@dataclass(frozen=True)
class PackedBlock:
    data: pa.Buffer  # an IPC stream: CHUNK_SCHEMA and one record batch, buffers LZ4-compressed
    rows: int
    raw_bytes: int  # line bytes
    min_ts: int
    max_ts: int
    ascending: bool  # timestamps ascend (sealed chunks' blocks, and heads pushed in time order)
    # timestamps strictly ascend: in order and no two entries alike (a chunk of such blocks, each
    # after the one before, is sealed without decoding them: PendingChunk)
    strictly_ascending: bool = False

    @classmethod
    def pack(cls, batch: pa.RecordBatch, raw_bytes: int | None = None) -> PackedBlock:
        ts = batch.column(0).to_numpy()
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, CHUNK_SCHEMA, options=_WRITE) as writer:
            writer.write_batch(batch)
        return cls(
            # copied to a buffer of its own size: the stream's grows by doubling and keeps its
            # capacity (~35% more memory than the bytes, measured over the bench's blocks)
            pa.py_buffer(sink.getvalue().to_pybytes()),
            batch.num_rows,
            line_bytes_of(batch.column(1)) if raw_bytes is None else raw_bytes,
            int(ts.min()) if len(ts) else 0,
            int(ts.max()) if len(ts) else 0,
            bool(len(ts) < 2 or not np.any(ts[1:] < ts[:-1])),
            bool(len(ts) < 2 or np.all(ts[1:] > ts[:-1])),
        )

    def batch(self) -> pa.RecordBatch:
        batch: pa.RecordBatch = pa.ipc.open_stream(self.data, options=_READ).read_next_batch()
        return batch

    def overlaps(self, start: int, end: int) -> bool:
        return self.min_ts < end and self.max_ts >= start

    def window(self, start: int, end: int) -> pa.RecordBatch:
        """The block's entries with start <= ts < end, decoded."""
        bounds = (self.min_ts, self.max_ts) if self.ascending else None
        return in_range(self.batch(), bounds, start, end, self.ascending)


def pack_table(table: pa.Table, block_bytes: int) -> tuple[PackedBlock, ...]:
    """A (sorted) table as blocks of about `block_bytes` line bytes, split as a chunk file's
    blocks are (format.split_blocks): a flushed chunk's token index then describes these blocks."""
    return tuple(PackedBlock.pack(batch) for batch in split_blocks(table, block_bytes))


def unpack_blocks(blocks: Sequence[PackedBlock]) -> pa.Table:
    """Every entry of the blocks, in order, as one table."""
    if not blocks:
        return CHUNK_SCHEMA.empty_table()
    return pa.Table.from_batches([block.batch() for block in blocks], schema=CHUNK_SCHEMA)
