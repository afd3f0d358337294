"""HeadBlock: the open, appendable tail of one stream, plus sealed chunks not yet flushed."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.format import CHUNK_SCHEMA, ChunkLayout, split_blocks
from svclog.chunk.packed import PackedBlock, line_bytes_of, pack_table, unpack_blocks

# line bytes per packed block, as a chunk file's blocks (the ingester's chunk_block_size overrides it)
DEFAULT_BLOCK_BYTES = 256 * 1024


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


class SealedChunk:
    """A cut chunk waiting to be flushed: entries sorted by timestamp (push order among equal
    ones), de-duplicated, held as packed blocks that become the chunk file's blocks;
    `sealed_ns` orders it among the stream's other chunks."""

    def __init__(
        self,
        blocks: Sequence[PackedBlock],
        min_ts: int,
        max_ts: int,
        raw_bytes: int,
        sealed_ns: int = 0,
        block_bytes: int = DEFAULT_BLOCK_BYTES,
    ):
        self._blocks: tuple[PackedBlock, ...] | None = tuple(blocks)
        self.block_bytes = block_bytes  # the line bytes its blocks were cut at
        self.min_ts, self.max_ts = min_ts, max_ts
        self._raw_bytes = raw_bytes
        self.sealed_ns = sealed_ns
        # the written chunk's block bounds and token index, once flushed as one chunk: the ingester's
        # selects of the retained copy then skip blocks a needle cannot be in, as store reads do
        self.layout: ChunkLayout | None = None
        # the store's keys of the files it was written as, once flushed (several when split by index
        # period): a select answered from the retained copy names them, so the querier skips them
        self.store_keys: tuple[str, ...] = ()
        # (probe key, blocks it may match) of the last probe asked: a query's time windows ask again
        self.probed: tuple[object, np.ndarray] | None = None

    def __repr__(self) -> str:
        return f"SealedChunk(min_ts={self.min_ts}, max_ts={self.max_ts}, raw_bytes={self.raw_bytes})"

    @property
    def blocks(self) -> tuple[PackedBlock, ...]:
        blocks = self._blocks
        assert blocks is not None  # set from the start here; PendingChunk seals first
        return blocks

    @property
    def table(self) -> pa.Table:
        """Every entry, decoded (a copy: callers keep it only as long as they use it)."""
        return unpack_blocks(self.blocks)

    @property
    def rows(self) -> int:
        return sum(block.rows for block in self.blocks)

    @property
    def raw_bytes(self) -> int:
        return self._raw_bytes

    @classmethod
    def from_table(
        cls, table: pa.Table, sealed_ns: int | None = None, block_bytes: int = DEFAULT_BLOCK_BYTES
    ) -> SealedChunk:
        table = sort_dedupe(table)
        ts = table.column("ts")
        return cls(
            pack_table(table, block_bytes),
            int(pc.min(ts).as_py()),
            int(pc.max(ts).as_py()),
            int(pc.sum(pc.binary_length(table.column("line"))).as_py() or 0),
            next_seal_ns() if sealed_ns is None else sealed_ns,
            block_bytes,
        )


class PendingChunk(SealedChunk):
    """A head cut on the append that filled it, sealed when first read, outside the ingester's
    lock: by the ingester's packer thread soon after the cut, or earlier by the flush's upload or
    a select. Sealing keeps the head's blocks when every entry is after the one before; otherwise
    it joins, sorts, de-duplicates and packs them again.

    Sealing on append held the lock for every head one push filled (~2-20 ms each, several
    at once when streams grow alike) and the push that filled them waited for all of it. The
    bounds and seal stamp are fixed at the cut; the pieces are immutable, so two threads that
    seal at once build equal blocks."""

    def __init__(
        self,
        pieces: tuple[list[PackedBlock], list[pa.RecordBatch]],
        min_ts: int,
        max_ts: int,
        raw_bytes: int,
        block_bytes: int = DEFAULT_BLOCK_BYTES,
    ):
        # the head's count until sealed (de-duplication may lower it); de-duplication keeps a first
        # copy, so the bounds hold
        super().__init__((), min_ts, max_ts, raw_bytes, next_seal_ns(), block_bytes)
        self._blocks = None
        self._pieces: tuple[list[PackedBlock], list[pa.RecordBatch]] | None = pieces

    @property
    def blocks(self) -> tuple[PackedBlock, ...]:
        blocks = self._blocks
        if blocks is None:
            blocks = self._seal()[0]
        return blocks

    @property
    def table(self) -> pa.Table:
        blocks = self._blocks
        if blocks is None:
            sealed = self._seal()[1]
            if sealed is not None:  # sealed just now: the table it was packed from, no decode
                return sealed
            blocks = self.blocks
        return unpack_blocks(blocks)

    def _seal(self) -> tuple[tuple[PackedBlock, ...], pa.Table | None]:
        pieces = self._pieces
        if pieces is None:  # another thread sealed it meanwhile (it sets the blocks first)
            return self.blocks, None
        packed, parts = pieces
        kept = _kept_in_order(packed, parts, self.block_bytes)
        if kept is not None:  # already sorted without repeats: the head's blocks stay as they are
            blocks = kept
            table = None
        else:
            batches = [block.batch() for block in packed] + list(parts)
            table = sort_dedupe(pa.Table.from_batches(batches, schema=CHUNK_SCHEMA))
            blocks = pack_table(table, self.block_bytes)
        self._raw_bytes = sum(block.raw_bytes for block in blocks)
        self._blocks, self._pieces = blocks, None
        return blocks, table


def _kept_in_order(
    packed: Sequence[PackedBlock], parts: Sequence[pa.RecordBatch], block_bytes: int
) -> tuple[PackedBlock, ...] | None:
    """A head's blocks and its open part packed, when every entry's timestamp is above the one
    before (nothing to sort, no repeat to drop: the common case of a stream pushed in time order);
    None otherwise. Sealing then compresses only the open part instead of decoding and compressing
    the whole chunk again (a quarter of an ingester's CPU in the bench's ingest)."""
    last = None
    for block in packed:
        if not block.strictly_ascending or (last is not None and block.min_ts <= last):
            return None
        last = block.max_ts
    rows = [batch for batch in parts if batch.num_rows]
    if not rows:
        return tuple(packed)
    open_part = pa.Table.from_batches(rows, schema=CHUNK_SCHEMA).combine_chunks()
    ts = open_part.column("ts").to_numpy()
    if (last is not None and ts[0] <= last) or (len(ts) > 1 and not np.all(ts[1:] > ts[:-1])):
        return None
    return tuple(packed) + pack_table(open_part, block_bytes)


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
    """Appendable entries of one stream: closed blocks, packed (compressed), then the open part,
    kept as the Arrow record batches appended (one per push).

    Python lists of strings cost several times the raw bytes; Arrow buffers cost the bytes, and a
    packed block about a third of them. The open part is packed into a block once it holds a
    block's worth of line bytes (`pack`, run by the ingester's packer thread outside its lock);
    its concatenated table is built lazily and cached until the next append.
    """

    def __init__(self) -> None:
        self._blocks: list[PackedBlock] = []
        self._parts: list[pa.RecordBatch] = []
        self._count = 0
        self.raw_bytes = 0
        self._open_bytes = 0  # line bytes of the open part
        self.min_ts = 0
        self.max_ts = 0
        self._table: pa.Table | None = None  # the open part joined
        self._shared = False
        self._owned = 0  # the first parts are in buffers of their own (copied by compact or open_table)

    def __len__(self) -> int:
        return self._count

    def append_batch(
        self, batch: pa.RecordBatch, min_ts: int, max_ts: int, raw_bytes: int, shared: bool = False
    ) -> None:
        """Append entries already in CHUNK_SCHEMA form. `shared`: the batch is a zero-copy slice of
        a larger one (a whole push), whose buffers it keeps alive until `compact` or `pack` copies it out."""
        if not self._count:
            self.min_ts, self.max_ts = min_ts, max_ts
        else:
            self.min_ts, self.max_ts = min(self.min_ts, min_ts), max(self.max_ts, max_ts)
        self._parts.append(batch)
        self._count += batch.num_rows
        self.raw_bytes += raw_bytes
        self._open_bytes += raw_bytes
        self._table = None
        self._shared = self._shared or shared

    def open_table(self) -> pa.Table:
        """The open part's entries as one table (cached until the next append)."""
        if self._table is None:
            if len(self._parts) > 1:
                self._shared = False  # combining copies every part into fresh buffers
            table = pa.Table.from_batches(self._parts, schema=CHUNK_SCHEMA).combine_chunks()
            # keep one batch: the next append concatenates two parts, not hundreds
            self._parts = table.to_batches() or []
            self._owned = len(self._parts) if not self._shared else 0
            self._table = table
        return self._table

    def table(self) -> pa.Table:
        """Every entry, in push order (the packed blocks decoded: a copy, for tests and rare paths)."""
        if not self._blocks:
            return self.open_table()
        batches = [block.batch() for block in self._blocks] + self.open_table().to_batches()
        return pa.Table.from_batches(batches, schema=CHUNK_SCHEMA)

    @property
    def blocks(self) -> list[PackedBlock]:
        """The closed blocks, in push order (immutable; the list is a copy)."""
        return list(self._blocks)

    def parts(self) -> list[pa.RecordBatch]:
        """The open part's batches as they are (immutable; no copy, unlike `open_table`): a WAL
        checkpoint takes these under the ingester's lock and copies them after releasing it."""
        return list(self._parts)

    def pack_due(self, block_bytes: int) -> bool:
        return self._open_bytes >= block_bytes

    def pack(self, block_bytes: int, lock: AbstractContextManager[object] | None = None) -> bool:
        """Pack the open part's entries into blocks of `block_bytes` of lines once it holds that
        many (what is left over stays open, in buffers of its own); True when it did. `lock` guards
        the head as in `compact`: the compression runs without it, and a head changed meanwhile by
        anything but appends keeps its parts (the next push or flush tick packs them)."""
        guard = lock if lock is not None else nullcontext()
        with guard:
            if self._open_bytes < block_bytes:
                return False
            taken = list(self._parts)
        batches = [batch for batch in taken if batch.num_rows]
        joined = pa.Table.from_batches(batches, schema=CHUNK_SCHEMA).combine_chunks()
        full = split_blocks(joined, block_bytes)
        left: list[pa.RecordBatch] = []
        if len(full) > 1 and line_bytes_of(full[-1].column(1)) < block_bytes:
            rest = full.pop()  # copied out: as a slice it would pin the whole joined buffers
            left = [
                pa.RecordBatch.from_arrays([pa.concat_arrays([column]) for column in rest.columns], schema=CHUNK_SCHEMA)
            ]
        blocks = [PackedBlock.pack(batch) for batch in full]
        packed_bytes = sum(block.raw_bytes for block in blocks)
        with guard:
            current = self._parts[: len(taken)]
            if len(current) != len(taken) or any(a is not b for a, b in zip(current, taken)):
                return False
            self._blocks.extend(blocks)
            self._parts = left + self._parts[len(taken) :]
            self._open_bytes -= packed_bytes
            self._owned = len(left)
            self._shared = len(self._parts) > self._owned  # appended while packing: shared, as far as known
            self._table = None
        return True

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

    def seal(self, block_bytes: int = DEFAULT_BLOCK_BYTES) -> SealedChunk:
        """This head as a chunk; the joining, sorting, de-duplication and packing wait for its first read."""
        return PendingChunk(
            (list(self._blocks), list(self._parts)), self.min_ts, self.max_ts, self.raw_bytes, block_bytes
        )
