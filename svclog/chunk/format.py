"""The chunk format: one stream's entries for a time span as a compressed Arrow IPC file.

Columns: ts (int64 ns, ascending), line (string), metadata (map<string,string>, null
when an entry has none). Entries are written in record batches ("blocks") of about
`block_bytes` raw line bytes; each block's min/max timestamp is kept in the file's
schema metadata so a reader decodes only the blocks that overlap its time range.
The file footer's custom metadata carries the token index (token_index.py): one bloom
filter per block, so a reader skips blocks that cannot hold a needle without decompressing
them. Chunks written without it read as before (every block in range is decoded).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.token_index import FOOTER_KEY, TokenIndex, block_filter, encode_filters
from svclog.logql.source import METADATA_TYPE

CHUNK_SCHEMA = pa.schema([("ts", pa.int64()), ("line", pa.string()), ("metadata", METADATA_TYPE)])
# Every chunk_encoding the reference's config accepts, mapped to what Arrow IPC offers.
_CODECS = {
    "none": None,
    "snappy": "lz4",
    "lz4": "lz4",
    "lz4-64k": "lz4",
    "lz4-256k": "lz4",
    "lz4-1m": "lz4",
    "gzip": "zstd",
    "flate": "zstd",
    "zstd": "zstd",
}


@dataclass(frozen=True)
class ChunkData:
    """Decoded entries of a chunk (possibly only the blocks overlapping a query)."""

    ts: pa.Array
    line: pa.Array
    metadata: pa.Array

    def __len__(self) -> int:
        return len(self.ts)


_EMPTY = ChunkData(pa.array([], pa.int64()), pa.array([], pa.string()), pa.array([], METADATA_TYPE))


def _ipc_codec(encoding: str) -> str | None:
    # Arrow IPC compresses buffers with zstd or lz4 only; other reference encodings
    # (snappy, gzip) map to the nearest equivalent: lz4 for speed, zstd for ratio.
    encoding = (encoding or "zstd").lower()
    if encoding not in _CODECS:
        raise ValueError(f"unknown chunk encoding {encoding!r}")
    return _CODECS[encoding]


@dataclass
class BlockScan:
    """What a read did with the blocks of its time range (counters, summed over reads)."""

    blocks: int = 0  # blocks overlapping the time range
    indexed: int = 0  # of those, blocks a token index could be asked about
    skipped: int = 0  # of those, blocks the token index ruled out (not decompressed)
    chunks_skipped: int = 0  # chunks with blocks in range, every one ruled out
    # line bytes of the rows decoded without their lines (`lines=False`), each block's counted
    # in proportion to its rows in range: what stats report as processed, as a full read would
    unread_line_bytes: int = 0


# Given a chunk's token index, which of its blocks could hold a wanted line? (pushdown.BlockProbe)
BlockTest = Callable[[TokenIndex], np.ndarray]


class ChunkLayout:
    """What a reader needs to choose blocks: each block's time bounds and the token index
    (decoded on first use: a read without line filters never needs it)."""

    def __init__(
        self,
        bounds: tuple[tuple[int, int] | None, ...],
        index_bytes: bytes | None,
        ascending: bool = False,
        line_bytes: tuple[int, ...] | None = None,
    ):
        self.bounds = bounds  # per block, None when the writer kept none
        self.ascending = ascending  # the writer says every block's timestamps ascend
        self.line_bytes = line_bytes  # per block, None when the writer kept none (older chunks)
        self._index_bytes = index_bytes
        self._index: TokenIndex | None = None
        self._decoded = index_bytes is None

    @property
    def index_bytes(self) -> bytes | None:
        """The token index as the chunk's footer holds it (None: the chunk has none)."""
        return self._index_bytes

    @property
    def index(self) -> TokenIndex | None:
        # idempotent, so threads sharing a cached layout may race here (the decoded words are a
        # view of the footer's bytes: keeping the bytes costs nothing)
        if not self._decoded:
            index = TokenIndex.decode(self._index_bytes)
            self._index = index if index is not None and len(index) == len(self.bounds) else None
            self._decoded = True
        return self._index

    @classmethod
    def read(cls, reader: pa.ipc.RecordBatchFileReader) -> ChunkLayout:
        metadata = reader.schema.metadata or {}
        listed = json.loads(metadata.get(b"blocks", b"[]"))
        count = reader.num_record_batches
        bounds = tuple((int(listed[i][0]), int(listed[i][1])) if i < len(listed) else None for i in range(count))
        sizes = json.loads(metadata.get(b"line_bytes", b"null"))
        line_bytes = tuple(int(size) for size in sizes) if isinstance(sizes, list) and len(sizes) == count else None
        return cls(bounds, (reader.metadata or {}).get(FOOTER_KEY), metadata.get(b"ascending") == b"1", line_bytes)


def chunk_layout(data: bytes | pa.Buffer) -> ChunkLayout:
    return ChunkLayout.read(pa.ipc.open_file(pa.BufferReader(data)))


def encode_chunk(
    table: pa.Table, *, block_bytes: int = 256 * 1024, encoding: str = "zstd", token_index: bool = True
) -> bytes:
    """Serialise a (ts-sorted) table with CHUNK_SCHEMA columns into chunk bytes."""
    table = table.select(["ts", "line", "metadata"]).cast(CHUNK_SCHEMA)
    return encode_blocks(split_blocks(table, block_bytes), encoding=encoding, token_index=token_index)


def encode_blocks(batches: Sequence[pa.RecordBatch], *, encoding: str = "zstd", token_index: bool = True) -> bytes:
    """Serialise CHUNK_SCHEMA batches, one block each, as they are (sorted, without repeats, each
    block's timestamps after the previous block's: as a sealed chunk's packed blocks hold them)."""
    batches = [b for b in batches if b.num_rows]
    bounds = [[int(b.column(0)[0].as_py()), int(b.column(0)[-1].as_py())] for b in batches]
    # the table is sorted (every writer passes one through sort_dedupe): readers may slice blocks by
    # binary search without checking each block's order first (chunks written before say nothing).
    # Each block's line bytes let a read that needs no lines skip them and still count them.
    sizes = [line_bytes_of(b.column(1)) for b in batches]
    schema = CHUNK_SCHEMA.with_metadata(
        {"blocks": json.dumps(bounds), "ascending": "1", "line_bytes": json.dumps(sizes)}
    )
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=_ipc_codec(encoding))
    # in the footer only (the schema's metadata is written twice, at the start and in the footer)
    footer = (
        {FOOTER_KEY: encode_filters([block_filter(b.column(1), b.column(2)) for b in batches])} if token_index else None
    )
    with pa.ipc.new_file(sink, schema, options=options, metadata=footer) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def line_bytes_of(lines: pa.Array) -> int:
    """Line bytes of a string array, from its first and last offsets: O(1), as stats must cost
    nothing per line."""
    if not len(lines):
        return 0
    wide = pa.types.is_large_string(lines.type) or pa.types.is_large_binary(lines.type)
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64 if wide else np.int32)
    return int(offsets[lines.offset + len(lines)] - offsets[lines.offset])


def split_blocks(table: pa.Table, block_bytes: int) -> list[pa.RecordBatch]:
    if table.num_rows == 0:
        return []
    lengths = pc.binary_length(table.column("line")).to_numpy(zero_copy_only=False)
    cumulative = np.cumsum(lengths)
    # Row indices where a new block starts: every time the running size crosses a multiple.
    cuts = np.searchsorted(cumulative, np.arange(block_bytes, int(cumulative[-1]) + 1, block_bytes), side="left") + 1
    starts = [0] + [int(c) for c in cuts if 0 < c < table.num_rows]
    starts = sorted(set(starts))
    ends = starts[1:] + [table.num_rows]
    combined = table.combine_chunks()
    return [combined.slice(s, e - s).to_batches()[0] for s, e in zip(starts, ends) if e > s]


# Arrow's threaded decompression costs more than it saves on blocks this small (about twice
# the CPU and wall time for the bench's chunks); queries already run side by side.
_READ_OPTIONS = pa.ipc.IpcReadOptions(use_threads=False)


# Timestamps and metadata only: the line column, most of a block's bytes, is not decompressed
# (a block of the bench's chunks: ~31 against ~137 us).
_WITHOUT_LINES = pa.ipc.IpcReadOptions(use_threads=False, included_fields=[0, 2])


def open_chunk(data: bytes | pa.Buffer, lines: bool = True) -> pa.ipc.RecordBatchFileReader:
    """A chunk file's reader (its footer parsed, ~0.2 ms); its blocks can be read from several
    threads at once. Without `lines`, its blocks hold only the ts and metadata columns."""
    return pa.ipc.open_file(pa.BufferReader(data), options=_READ_OPTIONS if lines else _WITHOUT_LINES)


def decode_chunk(
    data: bytes | pa.Buffer,
    start: int | None = None,
    end: int | None = None,
    may_match: BlockTest | None = None,
    scan: BlockScan | None = None,
    layout: ChunkLayout | None = None,
) -> ChunkData:
    """Entries with start <= ts < end as one array per column (see `decode_blocks`)."""
    batches = decode_blocks(data, start, end, may_match, scan, layout)
    if not batches:
        return _EMPTY
    if len(batches) == 1:  # the usual case: no copy, the block's own buffers
        batch = batches[0]
        return ChunkData(batch.column(0), batch.column(1), batch.column(2))
    table = pa.Table.from_batches(batches, schema=CHUNK_SCHEMA).combine_chunks()
    return ChunkData(table.column("ts").chunk(0), table.column("line").chunk(0), table.column("metadata").chunk(0))


def decode_blocks(
    data: bytes | pa.Buffer,
    start: int | None = None,
    end: int | None = None,
    may_match: BlockTest | None = None,
    scan: BlockScan | None = None,
    layout: ChunkLayout | None = None,
    open_file: Callable[[bool], pa.ipc.RecordBatchFileReader] | None = None,
    lines: bool = True,
) -> list[pa.RecordBatch]:
    """The non-empty entries with start <= ts < end of each block, decoding only the blocks that
    overlap and, when the chunk has a token index, that `may_match` does not rule out. With the
    chunk's `layout` at hand (cached by the caller), a chunk whose blocks are all ruled out is
    not even opened (`open_file(lines)`, when given, opens it: a caller may keep it opened). The
    blocks stay apart: a caller that joins them with other chunks' copies them once, there.

    Without `lines` (for a reader that needs none) the blocks' lines are not decompressed: each
    comes back as an empty string, and `scan.unread_line_bytes` counts what they held. A chunk
    whose writer kept no per-block line bytes is read whole, lines and all."""
    opened = open_file if open_file is not None else lambda whole: open_chunk(data, whole)
    reader = None
    if layout is None:
        reader = opened(True)
        layout = ChunkLayout.read(reader)
    wanted = [
        position
        for position, bounds in enumerate(layout.bounds)
        if bounds is None or not ((end is not None and bounds[0] >= end) or (start is not None and bounds[1] < start))
    ]
    scan = scan if scan is not None else BlockScan()
    scan.blocks += len(wanted)
    if wanted and may_match is not None and layout.index is not None:
        possible = may_match(layout.index)
        scan.indexed += len(wanted)
        kept = [position for position in wanted if possible[position]]
        scan.skipped += len(wanted) - len(kept)
        scan.chunks_skipped += int(not kept)
        wanted = kept
    if not wanted:
        return []
    sizes = layout.line_bytes
    if lines or sizes is None:
        reader = reader if reader is not None else opened(True)
        batches = [
            in_range(reader.get_batch(position), layout.bounds[position], start, end, layout.ascending)
            for position in wanted
        ]
        return [batch for batch in batches if batch.num_rows]
    reader = opened(False)
    out = []
    for position in wanted:
        block = reader.get_batch(position)
        kept = in_range(_with_empty_lines(block), layout.bounds[position], start, end, layout.ascending)
        if kept.num_rows:
            scan.unread_line_bytes += sizes[position] * kept.num_rows // block.num_rows
            out.append(kept)
    return out


def _with_empty_lines(block: pa.RecordBatch) -> pa.RecordBatch:
    """A block read without its lines (ts and metadata), with an empty line per entry."""
    rows = block.num_rows
    empty = pa.StringArray.from_buffers(rows, pa.py_buffer(np.zeros(rows + 1, dtype=np.int32)), pa.py_buffer(b""))
    return pa.record_batch([block.column(0), empty, block.column(1)], schema=CHUNK_SCHEMA)


def in_range(
    batch: pa.RecordBatch,
    bounds: tuple[int, int] | None,
    start: int | None,
    end: int | None,
    ascending: bool = False,
) -> pa.RecordBatch:
    """The block's rows with start <= ts < end: the block itself when all are, else a zero-copy
    slice (a block's timestamps ascend), or a filter when they do not ascend (`ascending`: the
    writer says they do, so that is not checked)."""
    if bounds is not None and bounds[0] <= bounds[1]:  # first and last ts: the writer sorted the block
        if (start is None or bounds[0] >= start) and (end is None or bounds[1] < end):
            return batch
    elif start is None and end is None:
        return batch
    ts = batch.column(0).to_numpy()
    if not ascending and len(ts) > 1 and bool(np.any(ts[1:] < ts[:-1])):  # written by something that did not sort
        keep = np.ones(len(ts), dtype=bool)
        if start is not None:
            keep &= ts >= start
        if end is not None:
            keep &= ts < end
        return batch.filter(pa.array(keep))
    lo = 0 if start is None else int(np.searchsorted(ts, start, side="left"))
    hi = len(ts) if end is None else int(np.searchsorted(ts, end, side="left"))
    if lo == 0 and hi == len(ts):
        return batch
    batch = batch.slice(lo, max(hi - lo, 0))
    metadata = batch.column(2)
    if batch.num_rows and metadata.null_count < len(metadata):
        # a map slice's .keys/.items ignore its offset: give readers a compact copy
        batch = pa.record_batch([batch.column(0), batch.column(1), pa.concat_arrays([metadata])], schema=batch.schema)
    return batch
