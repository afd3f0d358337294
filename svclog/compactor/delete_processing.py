"""Processing a delete shard: rewrite every affected chunk without the deleted entries."""

from __future__ import annotations

import pyarrow.compute as pc

from svclog.compactor.chunks import ChunkIO
from svclog.compactor.delete_filter import DeleteFilter
from svclog.compactor.tenant_index import TenantIndex


def apply_delete(index: TenantIndex, chunks: ChunkIO, delete: DeleteFilter) -> int:
    """Edit `index` (not yet committed) so no chunk holds an entry `delete` matches; returns lines removed."""
    removed = 0
    for ref in index.refs_between(delete.start, delete.end):
        if not delete.matches_stream(ref.labels):
            continue
        whole = not delete.line_filters and delete.start <= ref.min_ts and ref.max_ts <= delete.end
        if whole:
            index.replace([ref], [])
            removed += ref.entries
            continue
        table = chunks.read(ref)
        if table is None:
            index.replace([ref], [])
            continue
        mask = delete.mask(table.column("ts"), table.column("line"))
        hits = int(pc.sum(mask.cast("int64")).as_py() or 0)
        if hits == 0:
            continue
        kept = table.filter(pc.invert(mask))
        index.replace([ref], [chunks.write(index.tenant, ref.labels, kept, ref.sealed_ns)] if kept.num_rows else [])
        removed += hits
    return removed
