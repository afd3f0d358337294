"""The wire form of a push batch from distributor to ingester: one Arrow record batch for the whole push.

Layout: an 8-byte magic, a u32 header length, the pickled header (tenant, then each stream's
label pairs and entry count, in row order), and an Arrow IPC stream of one CHUNK_SCHEMA batch
with LZ4-compressed buffers. The ingester appends a stream's rows to its head as zero-copy
slices of that batch (no Python object per entry), and writes the same bytes to its WAL
unchanged. A 1000-line push compresses to well under Ray's inline-argument size, so the bytes
travel inside the task rather than through the object store.

Batches of the previous form (LZ4-compressed pickled lists, no magic) still decode: WAL
segments written before an upgrade replay.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Sequence
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.chunk.packed import line_bytes_of
from svclog.model import ColumnStream, Labels, PushStream, StreamColumns

_MAGIC = b"SVLGARW\x02"  # read as the old format's u64 size this would be > 2**56 bytes: no clash
_HEADER = struct.Struct("<I")
# one thread: Arrow's pool would hand each buffer's (de)compression to other threads, costing
# more in wake-ups than it saves on a ~200 kB push (measured: more CPU and more wall time)
_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4", use_threads=False)
_READ_OPTIONS = pa.ipc.IpcReadOptions(use_threads=False)
_LEGACY_CODEC = pa.Codec("lz4")
_LEGACY_SIZE = struct.Struct("<Q")
_METADATA_TYPE = CHUNK_SCHEMA.field("metadata").type


class BatchStream:
    """One stream's rows of a decoded push: a zero-copy slice of the push's record batch.

    Duck-compatible with StreamColumns where the ingester reads one (`labels`, `len`,
    `raw_bytes`); `ts`, `lines` and `metadata` as Python lists are built only when a rare
    path asks (a partly rate-limited stream, a live tail)."""

    __slots__ = ("_lists", "_longest", "_size", "batch", "bounds", "labels", "source")

    def __init__(
        self,
        labels: Labels,
        batch: pa.RecordBatch,
        bounds: tuple[int, int] | None = None,
        size: int | None = None,
        longest: int | None = None,
    ):
        self.labels = labels
        self.batch = batch
        # (min ts, max ts), line bytes and the longest line's bytes, when the decoder computed
        # them for the whole push
        self.bounds = bounds
        self._size = size
        self._longest = longest
        self._lists: StreamColumns | None = None
        # (the push's timestamps as numpy, its lines as the Python strings, this stream's first
        # row): set by a decoder that had them anyway (the gateway's JSON path), so the pattern
        # tee's sample of a stream is two list slices
        self.source: tuple[np.ndarray, list[str], int] | None = None

    def ts_bounds(self) -> tuple[int, int]:
        if self.bounds is None:
            ts = self.batch.column(0).to_numpy()
            self.bounds = (int(ts.min()), int(ts.max()))
        return self.bounds

    def __len__(self) -> int:
        rows: int = self.batch.num_rows
        return rows

    def raw_bytes(self) -> int:
        """UTF-8 bytes of the lines, from the string offsets (O(1))."""
        if self._size is None:
            self._size = line_bytes_of(self.batch.column(1))
        return self._size

    def line_sizes(self) -> list[int]:
        """Bytes of each line (the per-stream rate limit's partial acceptance)."""
        sizes: list[int] = pc.binary_length(self.batch.column(1)).to_pylist()
        return sizes

    def has_metadata(self) -> bool:
        metadata = self.batch.column(2)
        return bool(metadata.null_count < len(metadata))

    def fits_line_size(self, limit: int) -> bool:
        """Every line is at most `limit` UTF-8 bytes (from the string offsets)."""
        if self._longest is None:
            sizes = _line_sizes(self.batch.column(1))
            self._longest = int(sizes.max()) if len(sizes) else 0
        return self._longest <= limit

    def sample(self, stride: int) -> StreamColumns:
        """Every `stride`-th entry as lists, without metadata (the pattern tee's copy): the
        decoder's own line objects when it kept them, else only the sampled lines are read
        (two Arrow takes per stream cost ~45 us, ~1 ms per push)."""
        if self.source is not None:
            stamps, lines, first = self.source
            rows = slice(first, first + len(self), stride)
            return StreamColumns(self.labels, stamps[rows].tolist(), lines[rows])
        ts: list[int] = self.batch.column(0).to_numpy()[::stride].tolist()
        column = self.batch.column(1)
        offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)[column.offset : column.offset + len(column) + 1]
        data = column.buffers()[2]
        view = memoryview(data if data is not None else b"")
        starts, ends = offsets[:-1:stride].tolist(), offsets[1::stride].tolist()
        return StreamColumns(self.labels, ts, [str(view[a:b], "utf-8") for a, b in zip(starts, ends)])

    def to_push(self) -> PushStream:
        return self.columns().to_push()

    def concat(self, other: ColumnStream) -> StreamColumns:
        return self.columns().concat(other)

    def columns(self) -> StreamColumns:
        if self._lists is None and self.source is not None:
            self._lists = self.sample(1)  # the decoder's own lines, sliced (its batches have no metadata)
        if self._lists is None:
            metadata = self.batch.column(2)
            md = None
            if metadata.null_count < len(metadata):
                md = [list(v) if v else None for v in metadata.to_pylist()]
            self._lists = StreamColumns(
                self.labels, self.batch.column(0).to_pylist(), self.batch.column(1).to_pylist(), md
            )
        return self._lists

    @property
    def ts(self) -> list[int]:
        return self.columns().ts

    @property
    def lines(self) -> list[str]:
        return self.columns().lines

    @property
    def metadata(self) -> list[list[tuple[str, str]] | None] | None:
        return self.columns().metadata

    def slice(self, length: int) -> BatchStream:
        return BatchStream(self.labels, self.batch.slice(0, length))


# One stream of a push as the ingester takes it: decoded lists, or a slice of the wire batch.
PushedStream = StreamColumns | BatchStream


def _line_sizes(lines: pa.Array) -> np.ndarray:
    """UTF-8 bytes of each string (differences of the offsets; no copy of the data)."""
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset : lines.offset + len(lines) + 1]
    return np.diff(offsets)


def entries_of(streams: list[StreamColumns]) -> pa.RecordBatch:
    """All streams' entries as one CHUNK_SCHEMA batch, rows of a stream contiguous, in order."""
    ts = pa.array(list(chain.from_iterable(s.ts for s in streams)), pa.int64())
    lines = pa.array(list(chain.from_iterable(s.lines for s in streams)), pa.string())
    if any(s.metadata is not None for s in streams):
        metadata = pa.array([md for s in streams for md in (s.metadata or [None] * len(s))], _METADATA_TYPE)
    else:
        metadata = pa.nulls(len(ts), _METADATA_TYPE)
    return pa.record_batch([ts, lines, metadata], schema=CHUNK_SCHEMA)


def encode_batch(tenant: str, streams: Sequence[ColumnStream]) -> bytes:
    """StreamColumns (or BatchStreams) of one tenant -> wire bytes."""
    batches = [s.batch for s in streams if isinstance(s, BatchStream)]
    if streams and len(batches) == len(streams):
        batch = pa.Table.from_batches(batches, schema=CHUNK_SCHEMA).combine_chunks()
        batch = batch.to_batches()[0] if batch.num_rows else entries_of([])
    else:
        batch = entries_of([s.columns() for s in streams])
    header = pickle.dumps((tenant, [(s.labels.items, len(s)) for s in streams]), protocol=pickle.HIGHEST_PROTOCOL)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, CHUNK_SCHEMA, options=_OPTIONS) as writer:
        writer.write_batch(batch)
    return b"".join((_MAGIC, _HEADER.pack(len(header)), header, sink.getvalue().to_pybytes()))


def decode_batch(payload: bytes) -> tuple[str, list[PushedStream]]:
    """Wire bytes -> (tenant, BatchStreams); the previous form gives StreamColumns."""
    if not payload.startswith(_MAGIC):
        return _decode_legacy(payload)
    start = len(_MAGIC) + _HEADER.size
    (size,) = _HEADER.unpack_from(payload, len(_MAGIC))
    tenant, layout = pickle.loads(memoryview(payload)[start : start + size])
    reader = pa.ipc.open_stream(pa.py_buffer(payload)[start + size :], options=_READ_OPTIONS)
    batch = reader.read_next_batch()
    return tenant, list(split_batch(batch, [Labels(items) for items, _ in layout], [count for _, count in layout]))


def split_batch(batch: pa.RecordBatch, labels: list[Labels], counts: list[int]) -> list[BatchStream]:
    """A push's batch (CHUNK_SCHEMA, each stream's rows contiguous, in order) as BatchStreams,
    each with its timestamp bounds and line bytes computed for the whole push at once."""
    if not batch.num_rows:
        return [BatchStream(item, batch.slice(0, 0), None, 0, 0) for item in labels]
    sizes = np.array(counts, dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    ts = batch.column(0).to_numpy()
    # every stream's min and max timestamp and longest line in a numpy call each for the whole
    # push (a compute call per stream cost ~30 us each)
    nonempty = np.flatnonzero(sizes)
    firsts = starts[nonempty]
    line_sizes = _line_sizes(batch.column(1))
    stats: dict[int, tuple[int, int, int]] = {}
    if len(nonempty):
        lows = np.minimum.reduceat(ts, firsts).tolist()
        highs = np.maximum.reduceat(ts, firsts).tolist()
        longest = np.maximum.reduceat(line_sizes, firsts).tolist()
        stats = dict(zip(nonempty.tolist(), zip(lows, highs, longest)))
    offsets = np.concatenate(([0], np.cumsum(line_sizes)))
    totals = (offsets[starts + sizes] - offsets[starts]).tolist()
    streams = []
    for i, (item, start, count, total) in enumerate(zip(labels, starts.tolist(), counts, totals)):
        low, high, most = stats.get(i, (0, 0, 0))
        streams.append(BatchStream(item, batch.slice(start, count), (low, high) if count else None, total, most))
    return streams


def _decode_legacy(payload: bytes) -> tuple[str, list[PushedStream]]:
    (size,) = _LEGACY_SIZE.unpack_from(payload)
    raw = _LEGACY_CODEC.decompress(memoryview(payload)[_LEGACY_SIZE.size :], decompressed_size=size, asbytes=True)
    tenant, streams = pickle.loads(raw)
    return tenant, [StreamColumns(Labels(items), ts, lines, md) for items, ts, lines, md in streams]
