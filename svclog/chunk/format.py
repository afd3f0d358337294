"""The chunk format: one stream's entries for a time span as a compressed Arrow IPC file.

Columns: ts (int64 ns, ascending), line (string), metadata (map<string,string>, null
when an entry has none). Entries are written in record batches ("blocks") of about
`block_bytes` raw line bytes; each block's min/max timestamp is kept in the file's
schema metadata so a reader decodes only the blocks that overlap its time range.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql.source import METADATA_TYPE

CHUNK_SCHEMA = pa.schema([("ts", pa.int64()), ("line", pa.string()), ("metadata", METADATA_TYPE)])
# Every chunk_encoding the reference's config accepts, mapped to what Arrow IPC offers.
_CODECS = {"none": None, "snappy": "lz4", "lz4": "lz4", "lz4-64k": "lz4", "lz4-256k": "lz4", "lz4-1m": "lz4",
           "gzip": "zstd", "flate": "zstd", "zstd": "zstd"}


@dataclass(frozen=True)
class ChunkData:
    """Decoded entries of a chunk (possibly only the blocks overlapping a query)."""

    ts: pa.Array
    line: pa.Array
    metadata: pa.Array

    def __len__(self) -> int:
        return len(self.ts)


def _ipc_codec(encoding: str) -> str | None:
    # Arrow IPC compresses buffers with zstd or lz4 only; other reference encodings
    # (snappy, gzip) map to the nearest equivalent: lz4 for speed, zstd for ratio.
    encoding = (encoding or "zstd").lower()
    if encoding not in _CODECS:
        raise ValueError(f"unknown chunk encoding {encoding!r}")
    return _CODECS[encoding]


def encode_chunk(table: pa.Table, *, block_bytes: int = 256 * 1024, encoding: str = "zstd") -> bytes:
    """Serialise a (ts-sorted) table with CHUNK_SCHEMA columns into chunk bytes."""
    table = table.select(["ts", "line", "metadata"]).cast(CHUNK_SCHEMA)
    batches = _split_blocks(table, block_bytes)
    bounds = [[int(b.column(0)[0].as_py()), int(b.column(0)[-1].as_py())] for b in batches if b.num_rows]
    schema = CHUNK_SCHEMA.with_metadata({"blocks": json.dumps(bounds)})
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=_ipc_codec(encoding))
    with pa.ipc.new_file(sink, schema, options=options) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _split_blocks(table: pa.Table, block_bytes: int) -> list[pa.RecordBatch]:
    if table.num_rows == 0:
        return []
    lengths = pc.binary_length(table.column("line")).to_numpy(zero_copy_only=False)
    import numpy as np

    cumulative = np.cumsum(lengths)
    # Row indices where a new block starts: every time the running size crosses a multiple.
    cuts = np.searchsorted(cumulative, np.arange(block_bytes, int(cumulative[-1]) + 1, block_bytes), side="left") + 1
    starts = [0] + [int(c) for c in cuts if 0 < c < table.num_rows]
    starts = sorted(set(starts))
    ends = starts[1:] + [table.num_rows]
    combined = table.combine_chunks()
    return [combined.slice(s, e - s).to_batches()[0] for s, e in zip(starts, ends) if e > s]


def decode_chunk(data: bytes | pa.Buffer, start: int | None = None, end: int | None = None) -> ChunkData:
    """Entries with start <= ts < end, decoding only the blocks that overlap."""
    reader = pa.ipc.open_file(pa.BufferReader(data))
    bounds = json.loads((reader.schema.metadata or {}).get(b"blocks", b"[]"))
    batches = []
    for index in range(reader.num_record_batches):
        lo, hi = bounds[index] if index < len(bounds) else (None, None)
        if lo is not None and ((end is not None and lo >= end) or (start is not None and hi < start)):
            continue
        batches.append(reader.get_batch(index))
    if not batches:
        empty = CHUNK_SCHEMA.empty_table()
        return ChunkData(empty.column(0).combine_chunks(), empty.column(1).combine_chunks(),
                         empty.column(2).combine_chunks())
    table = pa.Table.from_batches(batches, schema=CHUNK_SCHEMA)
    if start is not None or end is not None:
        ts = table.column("ts")
        mask = None
        if start is not None:
            mask = pc.greater_equal(ts, start)
        if end is not None:
            upper = pc.less(ts, end)
            mask = upper if mask is None else pc.and_(mask, upper)
        table = table.filter(mask)
    table = table.combine_chunks()
    return ChunkData(table.column("ts").chunk(0) if table.num_rows else pa.array([], pa.int64()),
                     table.column("line").chunk(0) if table.num_rows else pa.array([], pa.string()),
                     table.column("metadata").chunk(0) if table.num_rows else pa.array([], METADATA_TYPE))
