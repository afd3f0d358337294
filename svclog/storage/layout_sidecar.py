"""The layouts of an index segment's chunks, stored beside the segment.

A chunk's layout (its blocks' time bounds and line bytes, and its token index: chunk/format.py)
sits in the chunk file's footer, so a process learned it only by fetching the whole chunk once.
A needle query on a fresh querier (or the query frontend, which decides from what a query would
read whether to run it itself) fetched every chunk of the range just to learn that none could
hold the needle. The writer of a segment therefore also writes its chunks' layouts, in one
object next to it (`<segment>.layouts`, ~3% of the chunks' bytes): one GET tells a reader every
layout of a flush. The object goes first, so a listed segment's layouts exist when it has any;
segments of older writers have none and their chunks are learned by fetching them, as before.

An Arrow IPC file, one row per chunk: its key, each block's bounds and line bytes, whether its
blocks ascend, and the token index as the footer holds it (its bytes, decoded on first use).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.format import ChunkLayout
from svclog.storage.layout_cache import LayoutCache
from svclog.storage.objstore import ObjectStore
from svclog.storage.single_flight import SingleFlight

if TYPE_CHECKING:
    from svclog.storage.index import ChunkRef

log = logging.getLogger(__name__)

SEGMENT_SUFFIX = ".arrow"
SIDECAR_SUFFIX = ".layouts"

SIDECAR_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("lo", pa.list_(pa.int64())),  # per block; null where the writer kept no bounds
        ("hi", pa.list_(pa.int64())),
        ("line_bytes", pa.list_(pa.int64())),  # null list: the writer kept none
        ("ascending", pa.bool_()),
        ("index", pa.binary()),  # the footer's token index; null: the chunk has none
    ]
)


def sidecar_key(segment_key: str) -> str:
    """Where a segment's layouts are stored: the segment's key with its own suffix."""
    return segment_key.removesuffix(SEGMENT_SUFFIX) + SIDECAR_SUFFIX


def layouts_table(layouts: Iterable[tuple[str, ChunkLayout]]) -> pa.Table:
    keys, lo, hi, sizes, ascending, index = [], [], [], [], [], []
    for key, layout in layouts:
        keys.append(key)
        lo.append([b[0] if b is not None else None for b in layout.bounds])
        hi.append([b[1] if b is not None else None for b in layout.bounds])
        sizes.append(list(layout.line_bytes) if layout.line_bytes is not None else None)
        ascending.append(layout.ascending)
        index.append(layout.index_bytes)
    return pa.table([keys, lo, hi, sizes, ascending, index], schema=SIDECAR_SCHEMA)


def encode_table(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, SIDECAR_SCHEMA, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def decode_table(data: bytes) -> pa.Table:
    table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    if not table.schema.equals(SIDECAR_SCHEMA):
        raise ValueError(f"not a layouts object (schema {table.schema})")
    return table


def table_layouts(table: pa.Table) -> list[tuple[str, ChunkLayout]]:
    """(key, layout) per row; each layout reads as the chunk file's own (ChunkLayout.read)."""
    out = []
    columns = [table.column(name).to_pylist() for name in SIDECAR_SCHEMA.names]
    for key, lo, hi, sizes, ascending, index in zip(*columns):
        bounds = tuple((a, b) if a is not None and b is not None else None for a, b in zip(lo, hi))
        line_bytes = tuple(sizes) if sizes is not None and len(sizes) == len(bounds) else None
        out.append((key, ChunkLayout(bounds, index, bool(ascending), line_bytes)))
    return out


def read_layouts(store: ObjectStore, segment_key: str) -> pa.Table | None:
    """The layouts beside a segment; None when it has none, or none readable (then logged)."""
    try:
        return decode_table(store.get(sidecar_key(segment_key)))
    except FileNotFoundError:
        return None
    except Exception as err:  # noqa: BLE001 - a damaged object: its chunks are fetched instead
        log.warning("layouts of index segment %s unreadable: %s", segment_key, err)
        return None


def kept_rows(tables: Iterable[pa.Table], keys: Iterable[str]) -> pa.Table:
    """The rows of `tables` for the chunk keys in `keys`, each key once: a merged segment's
    layouts from the layouts of the segments it replaces."""
    parts = [t for t in tables if t.num_rows]
    if not parts:
        return SIDECAR_SCHEMA.empty_table()
    table = pa.concat_tables(parts)
    table = table.filter(pc.is_in(table.column("key"), value_set=pa.array(sorted(set(keys)), pa.string())))
    rows = pa.table({"key": table.column("key"), "row": pa.array(range(table.num_rows), pa.int64())})
    first = rows.group_by("key", use_threads=False).aggregate([("row", "min")]).column("row_min")
    return table.take(pc.take(first, pc.sort_indices(first)))


class SidecarLoader:
    """Reads the layouts beside the segments that a process's chunk refs came from into its
    LayoutCache: each segment's once (remembered whether it had any), when a ref of it is not
    known yet. A layouts object that is missing (an older writer, or the compactor replaced the
    segment) or unreadable leaves its chunks to be learned by fetching them."""

    MAX_REMEMBERED = 1 << 16  # segments tried; forgetting one costs one more GET at most

    def __init__(self, store: ObjectStore, layouts: LayoutCache):
        self.store = store
        self.layouts = layouts
        self.read = 0  # layouts objects read
        self._tried: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._loading = SingleFlight()

    def learn(self, refs: Sequence[ChunkRef]) -> None:
        """Make the layouts of `refs`' segments known, where the segments have them."""
        known = self.layouts.stack().slots
        wanted = {ref.segment for ref in refs if ref.segment and ref.key not in known}
        with self._lock:
            wanted.difference_update(self._tried)
        for segment in sorted(wanted):
            self._load(segment)

    def _load(self, segment: str) -> None:
        with self._loading.gate(segment):  # concurrent sub-queries meeting the same segment make one GET
            try:
                with self._lock:
                    if segment in self._tried:
                        return
                table = read_layouts(self.store, segment)
                found = table_layouts(table) if table is not None else []
                for key, layout in found:
                    self.layouts.put(key, layout)
                with self._lock:
                    self.read += bool(found)
                    self._tried[segment] = None
                    while len(self._tried) > self.MAX_REMEMBERED:
                        self._tried.popitem(last=False)
            finally:
                self._loading.done(segment)
