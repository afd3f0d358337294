"""Log queries: select, run the pipeline, then order, limit and thin (interval) the entries.

Entries of all series are merged into one time order (direction), ties broken
by series labels, then push order (reversed for backward), the first `limit` are kept and grouped back into streams.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from svclog.logql import ast
from svclog.logql.engine import stages_bridge as sb
from svclog.logql.engine.params import QueryParams
from svclog.logql.engine.result import Stream, StreamsResult
from svclog.logql.engine.samples import leading_line_filters, remaining_stages
from svclog.logql.source import LogSource, SelectRequest
from svclog.model import Labels


def evaluate_logs(query: ast.LogQuery, params: QueryParams, source: LogSource) -> StreamsResult:
    request = SelectRequest(matchers=query.selector.matchers, start=params.start, end=params.end,
                            line_filters=leading_line_filters(query))
    pipeline = sb.build_pipeline(remaining_stages(query, source))
    series: dict[Labels, list[tuple[np.ndarray, pa.Array]]] = {}
    for block in source.select_logs(request):
        batch = pipeline.process(sb.block_to_batch(block))
        if len(batch) == 0:
            continue
        ts = _to_numpy(batch.ts)
        for labels, idx in sb.group_by_labels(batch):
            if len(idx):
                series.setdefault(labels, []).append((ts[idx], batch.line.take(pa.array(idx))))
    if not series or params.limit == 0:
        return StreamsResult([])
    return _order_and_limit(series, params)


def _order_and_limit(series: dict[Labels, list[tuple[np.ndarray, pa.Array]]], params: QueryParams) -> StreamsResult:
    labels = sorted(series)
    ts_parts, line_parts, ids = [], [], []
    for sid, lb in enumerate(labels):
        for ts, lines in series[lb]:
            ts_parts.append(ts)
            line_parts.append(lines)
            ids.append(np.full(len(ts), sid, dtype=np.int64))
    ts = np.concatenate(ts_parts)
    sid = np.concatenate(ids)
    lines = pa.chunked_array(line_parts, pa.string()) if line_parts else pa.chunked_array([], pa.string())
    backward = params.direction == "backward"
    # equal timestamps: series (label) order, then a series' rows in push order (its blocks hold
    # them so), reversed for backward as the reference reads its chunks backward
    if backward:
        rev = np.arange(len(ts) - 1, -1, -1)
        order = rev[np.lexsort((sid[rev], -ts[rev]))]
    else:
        order = np.lexsort((sid, ts))
    if params.interval:
        order = _thin(ts, order, params.interval, backward, params.limit)
    else:
        order = order[: params.limit]
    picked_sid = sid[order]
    out = []
    for s in np.unique(picked_sid):
        rows = order[picked_sid == s]
        out.append(Stream(labels[s], ts[rows], lines.take(pa.array(rows)).to_pylist()))
    return StreamsResult(out)


def _thin(ts: np.ndarray, order: np.ndarray, interval: int, backward: bool, limit: int) -> np.ndarray:
    """The reference's interval: keep an entry when it is at least `interval` past the last kept one."""
    ordered_ts = ts[order]
    keys = -ordered_ts if backward else ordered_ts
    picked = []
    pos = 0
    while pos < len(order) and len(picked) < limit:
        picked.append(pos)
        pos = int(np.searchsorted(keys, keys[pos] + interval, side="left"))
    return order[np.asarray(picked, dtype=np.int64)]


def _to_numpy(array: pa.Array) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return np.asarray(array.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
