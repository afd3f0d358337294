"""Log queries: select, run the pipeline, then order, limit and thin (interval) the entries.

Entries of all series are merged into one time order (direction), ties broken
by series labels, then push order (reversed for backward), the first `limit` are kept and grouped back into streams.

With `categorize_labels` a series is keyed by its labels split into categories
(stream, structured metadata, parsed); the result groups entries by stream labels
only and each entry carries the other two, as the reference's categorize-labels
encoding reports them.
"""
from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pyarrow as pa

from svclog.logql import ast
from svclog.logql.engine import stages_bridge as sb
from svclog.logql.engine.params import QueryParams
from svclog.logql.engine.result import EntryLabels, Stream, StreamsResult
from svclog.logql.engine.samples import leading_line_filters, remaining_stages
from svclog.logql.source import LogSource, SelectRequest

SeriesParts = dict[Hashable, list[tuple[np.ndarray, pa.Array]]]


def evaluate_logs(query: ast.LogQuery, params: QueryParams, source: LogSource) -> StreamsResult:
    request = SelectRequest(matchers=query.selector.matchers, start=params.start, end=params.end,
                            line_filters=leading_line_filters(query))
    pipeline = sb.build_pipeline(remaining_stages(query, source))
    group = sb.group_by_categories if params.categorize_labels else sb.group_by_labels
    series: SeriesParts = {}
    for block in source.select_logs(request):
        batch = pipeline.process(sb.block_to_batch(block))
        if len(batch) == 0:
            continue
        ts = _to_numpy(batch.ts)
        for key, idx in group(batch):
            if len(idx):
                series.setdefault(key, []).append((ts[idx], batch.line.take(pa.array(idx))))
    if not series or params.limit == 0:
        return StreamsResult([])
    return _order_and_limit(series, params)


def _order_and_limit(series: SeriesParts, params: QueryParams) -> StreamsResult:
    keys = sorted(series)  # Labels, or CategorizedLabels (stream labels first)
    ts_parts, line_parts, ids = [], [], []
    for sid, key in enumerate(keys):
        for ts, lines in series[key]:
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
    if params.categorize_labels:
        return _categorized_streams(keys, ts, sid, lines, order)
    picked_sid = sid[order]
    out = []
    for s in np.unique(picked_sid):
        rows = order[picked_sid == s]
        out.append(Stream(keys[s], ts[rows], lines.take(pa.array(rows)).to_pylist()))
    return StreamsResult(out)


def _categorized_streams(keys: list, ts: np.ndarray, sid: np.ndarray, lines: pa.ChunkedArray,
                         order: np.ndarray) -> StreamsResult:
    """The picked entries grouped by stream labels alone, each with its other labels."""
    stream_ids: dict = {}
    stream_of_series = np.array([stream_ids.setdefault(key.stream, len(stream_ids)) for key in keys],
                                dtype=np.int64)
    streams = list(stream_ids)
    entry_labels = [EntryLabels(key.structured_metadata, key.parsed) for key in keys]
    picked = stream_of_series[sid[order]]
    out = []
    for s in np.unique(picked):
        rows = order[picked == s]
        out.append(Stream(streams[s], ts[rows], lines.take(pa.array(rows)).to_pylist(),
                          [entry_labels[i] for i in sid[rows].tolist()]))
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
