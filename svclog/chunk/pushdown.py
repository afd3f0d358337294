"""Line filters pushed down to where the data is (ingesters, freshly read chunks).

The engine re-applies every filter, so dropping entries early is only an optimisation:
fewer lines cross process boundaries and go through merging and sorting.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql.stages.line_filter import line_filter_mask


def apply_line_filters(table: pa.Table, line_filters: tuple) -> pa.Table:
    if not line_filters or table.num_rows == 0:
        return table
    lines = table.column("line")
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    mask = None
    for node in line_filters:
        part = line_filter_mask(node, lines)
        mask = part if mask is None else pc.and_(mask, part)
    return table.filter(pc.fill_null(mask, False))
