"""Reading and rewriting chunks: the compactor's only way to touch chunk objects."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.format import CHUNK_SCHEMA, decode_chunk, encode_chunk
from svclog.model import Labels
from svclog.storage import schema
from svclog.storage.index import ChunkRef
from svclog.storage.objstore import ObjectStore


def line_bytes(table: pa.Table) -> int:
    return int(pc.sum(pc.binary_length(table.column("line"))).as_py() or 0)


@dataclass(frozen=True)
class ChunkIO:
    store: ObjectStore
    encoding: str = "zstd"
    block_bytes: int = 256 * 1024

    def read(self, ref: ChunkRef) -> pa.Table | None:
        """All entries of a chunk as a CHUNK_SCHEMA table; None when the object is gone."""
        try:
            data = decode_chunk(self.store.get(ref.key))
        except FileNotFoundError:
            return None
        return pa.Table.from_arrays([data.ts, data.line, data.metadata], schema=CHUNK_SCHEMA)

    def write(self, tenant: str, labels: Labels, table: pa.Table, sealed_ns: int = 0) -> ChunkRef:
        """Upload a ts-sorted, non-empty table as a new chunk and return its ref."""
        data = encode_chunk(table, block_bytes=self.block_bytes, encoding=self.encoding)
        ts = table.column("ts")
        min_ts, max_ts = int(pc.min(ts).as_py()), int(pc.max(ts).as_py())
        fingerprint = labels.fingerprint()
        key = schema.chunk_key(tenant, fingerprint, min_ts, max_ts, zlib.crc32(data))
        self.store.put(key, data)
        return ChunkRef(
            labels, fingerprint, key, min_ts, max_ts, table.num_rows, line_bytes(table), len(data), sealed_ns
        )


def split_by_size(table: pa.Table, target_bytes: int) -> list[pa.Table]:
    """Cut a sorted table into consecutive pieces of about `target_bytes` raw line bytes each."""
    if table.num_rows == 0:
        return []
    sizes = pc.binary_length(table.column("line")).to_numpy(zero_copy_only=False)
    cumulative = np.cumsum(sizes)
    if target_bytes <= 0 or int(cumulative[-1]) <= target_bytes:
        return [table]
    # Greedy: a piece ends at the first row where its own size reaches the target.
    pieces, start, base = [], 0, 0
    while start < table.num_rows:
        end = int(np.searchsorted(cumulative, base + target_bytes, side="left")) + 1
        end = min(max(end, start + 1), table.num_rows)
        pieces.append(table.slice(start, end - start))
        base = int(cumulative[end - 1])
        start = end
    return pieces
