"""Chunk merging: small chunks of one stream in one day become chunks of about the target size.

Entries are concatenated in seal order, sorted (stably) and de-duplicated (replicas flush copies of the same
entries), then cut at the target size. Only chunks lying within a single day take part,
so a merged chunk never spans more index days than its parts did.
"""

from __future__ import annotations

import pyarrow as pa

from svclog.chunk.head import sort_dedupe
from svclog.compactor.chunks import ChunkIO, split_by_size
from svclog.compactor.tenant_index import TenantIndex
from svclog.storage import schema
from svclog.storage.index import ChunkRef


def merge_small_chunks(index: TenantIndex, chunks: ChunkIO, day: int, target_bytes: int) -> tuple[int, int]:
    """Edit `index` (not yet committed); returns (chunks merged away, chunks written)."""
    groups: dict[int, list[ChunkRef]] = {}
    for ref in index.refs_in(day):
        if ref.bytes < target_bytes and schema.period_of(ref.min_ts) == day == schema.period_of(ref.max_ts):
            groups.setdefault(ref.fingerprint, []).append(ref)
    merged = written = 0
    for refs in groups.values():
        if len(refs) < 2:
            continue
        refs.sort(key=lambda r: (r.sealed_ns, r.min_ts, r.max_ts))  # seal order keeps push order of equal timestamps
        tables = [t for t in (chunks.read(r) for r in refs) if t is not None and t.num_rows]
        if not tables:
            index.replace(refs, [])
            continue
        combined = sort_dedupe(pa.concat_tables(tables))
        sealed = max(r.sealed_ns for r in refs)
        new_refs = [
            chunks.write(index.tenant, refs[0].labels, piece, sealed + i)
            for i, piece in enumerate(split_by_size(combined, target_bytes))
        ]
        index.replace(refs, new_refs)
        merged += len(refs)
        written += len(new_refs)
    return merged, written
